"""The import graph points down (docs/layers.md): `lint-imports` keeps the contract in
pyproject.toml, the contract fails on an arrow running back up, and no lower app reaches a higher
one behind the linter's back (``apps.get_model`` or SQL naming its tables)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# App label -> package (a label differs from its package only for chat platforms).
PACKAGES_BY_LABEL = {"chat_channels": "channels"}

# Reads of a higher app that import-linter cannot see, today. Each is named with its reason; an
# entry that no longer matches fails the test, so the list can only shrink.
HIDDEN_ARROWS_TODAY = {
    # Spend's reports read run rows (the window's runs, their tree, by provider and key); they
    # move up into runs, or to spend's own ledger, in issue 31's second half.
    ("apps/spend/aggregates.py", "runs"): "reports window runs by their rows",
    ("apps/spend/rollup.py", "runs"): "the per-day rollup reads runs_run",
    ("apps/spend/rollup.py", "ratings"): "the usage card's thumbs per day read message_ratings",
}


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _layers() -> dict[str, int]:
    """Each app's floor in the contract, 0 the highest."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    floors = {}
    for floor, layer in enumerate(contract["layers"]):
        for module in re.split(r"[|:]", layer):
            module = module.strip()
            if module.startswith("apps."):
                floors[module.removeprefix("apps.")] = floor
    return floors


def test_the_layers_contract_is_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Apps import downward only KEPT" in result.stdout
    assert "No circle inside apps.runs KEPT" in result.stdout


def test_an_arrow_running_back_up_breaks_the_contract(tmp_path):
    # A copy of the code with one upward import added: the ground floor reading runs.
    for name in ("apps", "agenticos"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    probe = tmp_path / "apps" / "orgs" / "selectors.py"
    probe.write_text(probe.read_text() + "\nfrom apps.runs.models import Run  # noqa\n")

    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "apps.orgs is not allowed to import apps.runs" in result.stdout
    assert "apps.orgs.selectors -> apps.runs.models" in result.stdout


def _package_of_table() -> dict[str, str]:
    from django.apps import apps

    return {
        model._meta.db_table: model.__module__.split(".")[1]
        for model in apps.get_models(include_auto_created=True)
        if model.__module__.startswith("apps.")
    }


def _hidden_reads(path: Path, tables: dict[str, str]) -> set[str]:
    """Apps a module reads by name: ``get_model("label", ...)`` and SQL naming their tables."""
    text = path.read_text()
    labels = set(re.findall(r"get_model\(\s*[\"'](\w+)[\"']", text))
    packages = {PACKAGES_BY_LABEL.get(label, label) for label in labels}
    for table in re.findall(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+\"?(\w+)", text):
        if table in tables:
            packages.add(tables[table])
    return packages


def test_no_app_reads_a_higher_app_by_name_beyond_todays_list():
    floors = _layers()
    tables = _package_of_table()
    found = set()
    for path in sorted((ROOT / "apps").glob("*/**/*.py")):
        relative = path.relative_to(ROOT)
        if "migrations" in relative.parts:
            continue
        app = relative.parts[1]
        if app not in floors:
            continue
        for label in _hidden_reads(path, tables):
            if label in floors and floors[label] < floors[app]:
                found.add((str(relative), label))
    assert found <= set(HIDDEN_ARROWS_TODAY), sorted(found - set(HIDDEN_ARROWS_TODAY))
    # An arrow removed is struck off the list: it only shrinks.
    assert set(HIDDEN_ARROWS_TODAY) <= found, sorted(set(HIDDEN_ARROWS_TODAY) - found)


@pytest.mark.parametrize(
    "app,below",
    [("runs", "spend"), ("runs", "agents"), ("agents", "capabilities"), ("spend", "orgs")],
)
def test_the_contract_draws_the_style_guides_picture(app, below):
    floors = _layers()
    assert floors[app] < floors[below]
