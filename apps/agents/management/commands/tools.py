"""``agenticos tools ls --agent ID [--json] [--draft]`` (after seed 004's ``tools ls``).

Prints every tool a run of the agent's published version gets — capability, stable tool id, the
name the model sees, resolved approval, side effects — then what is withheld by configuration,
the capabilities switched off, and those not bound at all.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from apps.agents.manifest import tool_manifest
from apps.agents.models import Agent


class Command(BaseCommand):
    help = "List the tools a run of an agent gets: `tools ls --agent ID [--json] [--draft]`."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        ls = sub.add_parser("ls", help="every tool a run of the published version gets")
        ls.add_argument("--agent", required=True, type=int, help="the agent's id")
        ls.add_argument("--json", action="store_true", help="print JSON")
        ls.add_argument(
            "--draft", action="store_true", help="list the draft instead of the published version"
        )

    def handle(self, *args, action, agent, json: bool = False, draft: bool = False, **options):
        row = Agent.objects.filter(pk=agent).select_related("current_version").first()
        if row is None:
            raise CommandError(f"no agent {agent}")
        if draft:
            spec, source = row.draft_spec, "draft"
        elif row.current_version is not None:
            spec, source = row.current_version.spec, f"v{row.current_version.number}"
        else:
            raise CommandError(
                f"{row.name} has no published version; pass --draft to list its draft"
            )
        manifest = tool_manifest(spec, organization_id=row.organization_id)
        if json:
            payload = {
                "agent": {"id": row.pk, "name": row.name, "source": source},
                **manifest.as_json(),
            }
            self.stdout.write(_json_dumps(payload))
            return
        self._print_table(row, source, manifest)

    def _print_table(self, row, source, manifest):
        self.stdout.write(f"{row.name} ({source})")
        header = ("NAME", "CAPABILITY", "TOOL ID", "APPROVAL", "SIDE EFFECTS")
        rows = [
            (
                t.name + (" (renamed)" if t.renamed else ""),
                t.capability,
                t.tool_id,
                t.approval + (" (provider-executed)" if t.provider_executed else ""),
                "yes" if t.side_effecting else "no",
            )
            for t in manifest.tools
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            self.stdout.write(
                "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            )
        if not rows:
            self.stdout.write("(no tools)")
        if manifest.withheld:
            self.stdout.write("")
            self.stdout.write("Withheld by configuration:")
            for w in manifest.withheld:
                self.stdout.write(f"  {w.capability}.{w.tool_id}: {w.reason}")
        if manifest.disabled_capabilities:
            self.stdout.write("")
            self.stdout.write("Disabled capabilities: " + ", ".join(manifest.disabled_capabilities))
            self.stdout.write("Switch one back on in the Builder to give a run its tools.")
        if manifest.not_bound:
            self.stdout.write("")
            self.stdout.write("Not bound: " + ", ".join(manifest.not_bound))


def _json_dumps(payload) -> str:
    return json.dumps(payload, indent=2)
