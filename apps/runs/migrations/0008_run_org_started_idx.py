"""An expression index on (organization_id, COALESCE(started_at, created_at)): every spend and usage
figure windows runs by when they started (a queued one by when it was asked for), the run
history's rule, and the spend rollup builds and reads one organization's UTC day by it
(docs/spend.md, "The per-day rollup"). Raw SQL rather than a Meta index, so the Run model itself
is untouched; the expression is spelled exactly as the ORM's Coalesce("started_at", "created_at")
renders it, which is what lets the planner use it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("runs", "0007_run_exposure_id")]

    operations = [
        migrations.RunSQL(
            'CREATE INDEX run_org_started_idx ON runs_run '
            '(organization_id, (COALESCE(started_at, created_at)))',
            "DROP INDEX IF EXISTS run_org_started_idx",
        )
    ]
