"""`agenticos audit-verify [--org ID]`: recompute the audit chains, name the first broken entry.

Without --org it checks every chain in the database and every chain that has a checkpoint on
disk (so a chain deleted whole is still visited), the deployment-wide chain included. Each chain
that checks out gets a fresh checkpoint. Exit status 1 if any chain fails.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from apps.audit.models import DEPLOYMENT_CHAIN
from apps.audit.verify import chains_to_check, verify_chains


class Command(BaseCommand):
    help = "Recompute every audit hash chain and compare it with its signed checkpoint."

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group()
        target.add_argument(
            "--org", type=int, metavar="ID", help="check only this organization's chain"
        )
        target.add_argument(
            "--deployment", action="store_true", help="check only the deployment-wide chain"
        )
        parser.add_argument(
            "--no-checkpoint",
            action="store_true",
            help="verify without moving the checkpoints forward",
        )

    def handle(self, *args, org=None, deployment=False, no_checkpoint=False, **options):
        if deployment:
            chains = [DEPLOYMENT_CHAIN]
        else:
            chains = chains_to_check(org, only=org is not None)
        reports = verify_chains(chains, write=not no_checkpoint)
        failed = [report for report in reports if not report.ok]
        for report in reports:
            if report.ok:
                self.stdout.write(report.summary())
                for note in report.notes:
                    self.stdout.write(f"  note: {note}")
            else:
                self.stderr.write(report.summary())
        if not reports:
            self.stdout.write("no audit chains yet")
        if failed:
            raise CommandError(
                f"{len(failed)} of {len(reports)} audit chain(s) failed verification", returncode=1
            )
        self.stdout.write(self.style.SUCCESS(f"{len(reports)} audit chain(s) verified"))
