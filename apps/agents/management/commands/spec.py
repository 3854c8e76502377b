"""``agenticos spec validate FILE [--org SLUG]``, ``spec export --agent ID [--draft]``,
``spec import FILE --org SLUG [--name NAME] [--publish]``.

A file is YAML or JSON: either a bare spec, or the export form
``{agenticos_spec: 1, name, description, spec}``. Validation is the publish validation itself;
export/import round-trip an agent as YAML.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from apps.agents.models import Agent
from apps.agents.services import PublishRefused, agent_create, agent_publish
from apps.agents.validation import validate_spec
from apps.orgs.models import Organization

EXPORT_FORMAT = 1


def _load(path: str) -> tuple[dict, dict]:
    """(metadata, spec) from a YAML/JSON file; JSON is YAML, so one parser reads both."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CommandError(f"{path} is not YAML or JSON: {exc}") from None
    if not isinstance(data, dict):
        raise CommandError(f"{path} must hold a mapping (a spec, or an export with `spec:`)")
    if "agenticos_spec" in data or ("spec" in data and "capabilities" not in data):
        spec = data.get("spec")
        if not isinstance(spec, dict):
            raise CommandError(f"{path}: `spec:` must be a mapping")
        return {k: v for k, v in data.items() if k != "spec"}, spec
    return {}, data


def _organization(slug: str) -> Organization:
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        raise CommandError(f"no organization with slug {slug!r}")
    return organization


class Command(BaseCommand):
    help = "Validate, export and import agent specs (YAML or JSON)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        validate = sub.add_parser("validate", help="check a spec file with the publish rules")
        validate.add_argument("file")
        validate.add_argument(
            "--org",
            help="also check keys, sandbox connections, delegates and model profile in this organization",
        )
        export = sub.add_parser("export", help="print an agent as YAML")
        export.add_argument("--agent", type=int, required=True)
        export.add_argument(
            "--draft", action="store_true", help="export the draft instead of the published version"
        )
        imp = sub.add_parser("import", help="create an agent from a YAML/JSON file")
        imp.add_argument("file")
        imp.add_argument("--org", required=True)
        imp.add_argument("--name", help="the new agent's name (default: the file's `name`)")
        imp.add_argument("--publish", action="store_true", help="publish it as version 1")

    def handle(self, *args, action, **options):
        return getattr(self, f"_{action}")(**options)

    def _validate(self, file, org=None, **_):
        _, spec = _load(file)
        organization = _organization(org) if org else None
        errors = validate_spec(spec, organization=organization, actor=None)
        if errors:
            for error in errors:
                self.stdout.write(str(error))
            raise CommandError(f"{file}: {len(errors)} error(s); nothing would be published")
        self.stdout.write(f"{file}: OK — the publish rules accept this spec")
        if organization is None:
            self.stdout.write(
                "Checked without an organization: keys in the vault, sandbox connections, delegates "
                "and the model profile are checked with --org SLUG (and at publish)."
            )

    def _export(self, agent, draft=False, **_):
        row = Agent.objects.filter(pk=agent).select_related("current_version").first()
        if row is None:
            raise CommandError(f"no agent {agent}")
        if draft:
            spec = row.draft_spec
        elif row.current_version_id:
            spec = row.current_version.spec
        else:
            raise CommandError(
                f"{row.name} has no published version; pass --draft to export its draft"
            )
        document = {
            "agenticos_spec": EXPORT_FORMAT,
            "name": row.name,
            "description": row.description,
            "spec": spec,
        }
        self.stdout.write(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), ending="")

    def _import(self, file, org, name=None, publish=False, **_):
        meta, spec = _load(file)
        organization = _organization(org)
        name = name or meta.get("name") or Path(file).stem
        try:
            agent = agent_create(
                actor=None,
                organization=organization,
                name=name,
                description=meta.get("description") or "",
                spec=spec,
            )
        except ValidationError as error:
            raise CommandError("not imported: " + "; ".join(error.messages)) from None
        self.stdout.write(f"created agent {agent.pk} ({agent.name}) in {organization.slug}")
        if publish:
            try:
                version = agent_publish(actor=None, agent=agent)
            except PublishRefused as refused:
                for refusal in refused.errors:
                    self.stdout.write(str(refusal))
                raise CommandError(
                    f"agent {agent.pk} imported as a draft; publishing was refused"
                ) from None
            self.stdout.write(f"published v{version.number}")
