"""`agenticos reprice --from DATE --to DATE [--org SLUG] [--dry-run]` — price again the ledger's
floor entries (booked at $0 because no price was known) once a newer genai-prices snapshot or an
operator's price entry (admin → Model prices) knows the model. See apps/spend/reprice.py."""

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from apps.orgs.models import Organization
from apps.spend.reprice import NOT_RETROACTIVE, reprice


def _day(value: str, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--{name} must be a date, YYYY-MM-DD (got {value!r})") from None


class Command(BaseCommand):
    help = (
        "Reprice unpriced ledger entries booked between two days (UTC, both included) from their "
        "stored tokens; --dry-run shows what would change and writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="since", required=True, help="first day, YYYY-MM-DD")
        parser.add_argument("--to", dest="until", required=True, help="last day, YYYY-MM-DD")
        parser.add_argument("--org", dest="org", default=None, help="one organization's slug")
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, since, until, org, dry_run, **options):
        first, last = _day(since, "from"), _day(until, "to")
        if last < first:
            raise CommandError("--to must not be before --from")
        organization = None
        if org:
            organization = Organization.objects.filter(slug=org).first()
            if organization is None:
                raise CommandError(f"no organization with slug {org!r}")
        report = reprice(
            since=dt.datetime.combine(first, dt.time.min, tzinfo=dt.UTC),
            until=dt.datetime.combine(last, dt.time.max, tzinfo=dt.UTC),
            organization=organization,
            dry_run=dry_run,
        )
        names = dict(Organization.objects.values_list("pk", "slug"))
        heading = "Dry run — nothing written." if dry_run else "Repriced."
        self.stdout.write(f"{heading} Window {first.isoformat()} to {last.isoformat()} (UTC).")
        if not report.models:
            self.stdout.write("No unpriced entries in the window.")
        for (org_id, provider, model), totals in sorted(report.models.items()):
            source = totals.source or "no price known (still a floor)"
            self.stdout.write(
                f"  {names.get(org_id, org_id)}  {provider}/{model}: {totals.priced_entries} of "
                f"{totals.entries} entries priced by {source}: "
                f"${totals.before_usd:.6f} -> ${totals.after_usd:.6f}"
            )
        for org_id, (before, after) in sorted(report.organization_totals.items()):
            self.stdout.write(
                f"  {names.get(org_id, org_id)} months touched: ${before:.6f} -> ${after:.6f}"
            )
        if not dry_run:
            self.stdout.write(
                f"Rows updated: {report.runs_updated}; assistant turns updated: "
                f"{report.messages_updated}; one audit entry (spend.reprice) per organization "
                "and model."
            )
        self.stdout.write(NOT_RETROACTIVE)
