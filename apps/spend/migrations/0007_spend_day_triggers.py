"""The database logs which organization's UTC days (and hours) changed (spend_spenddaychange), from triggers
on every table a spend figure reads: runs, ledgers, ledger entries and ratings. A trigger rather
than a call in each service, because a Run row is written in many places (the runner's claims and
transitions, the reaper, resume, reprice) and one forgotten call would leave a cached day
disagreeing with the ledger; a trigger cannot be forgotten. Statement-level, with transition
tables, so a bulk insert (the benchmark's copy) logs each day once, and an UPDATE that changes no
column a figure reads (a lease renewal) logs nothing. One row per (organization, day,
transaction): concurrent writers never wait on each other (docs/spend.md, "The per-day rollup").
"""

from django.db import migrations

STARTED = "COALESCE({t}.started_at, {t}.created_at)"


def _log(moments_sql: str) -> str:
    """Log the UTC (day, hour) of each (organization_id, moment) ``moments_sql`` selects as
    changed by this transaction."""
    return f"""
    INSERT INTO spend_spenddaychange (organization_id, day, hour, xid, seq)
    SELECT o, d, h, pg_current_xact_id()::text::bigint, nextval('spend_day_change_seq')
    FROM (
        SELECT DISTINCT o, (ts AT TIME ZONE 'UTC')::date AS d,
            EXTRACT(hour FROM ts AT TIME ZONE 'UTC')::smallint AS h
        FROM ({moments_sql}) AS x(o, ts) WHERE ts IS NOT NULL
    ) AS s
    ORDER BY o, d, h
    ON CONFLICT (organization_id, day, hour, xid) DO UPDATE SET seq = EXCLUDED.seq;
    """


def _run_days(changed: str, *, descendants: bool = True) -> str:
    """The plpgsql that logs the days a change to the runs ``changed`` selects can move: each
    row's own day, its ancestors' (a top-level row's own spend discounts its tree) and its
    descendants' (a delegated row's crossing mark reads its root's start) — delegation nests at
    most three levels. Walked one level at a time by primary key or parent (``= ANY(array)``),
    never as one multi-way join: a join of the transition table to runs_run three deep is planned
    from the table's statistics, and on a table bulk-filled before it was analyzed that plan was
    a nested loop over every run per level (minutes for a few hundred rows)."""
    moment = "COALESCE(started_at, created_at)"
    walk_down = (
        """
    v_level := ARRAY(SELECT id FROM runs_run WHERE parent_run_id IN (SELECT unnest(v_ids)));
    v_related := v_related || v_level;
    v_level := ARRAY(SELECT id FROM runs_run WHERE parent_run_id IN (SELECT unnest(v_level)));
    v_related := v_related || v_level;
    v_level := ARRAY(SELECT id FROM runs_run WHERE parent_run_id IN (SELECT unnest(v_level)));
    v_related := v_related || v_level;"""
        if descendants
        else ""
    )
    return f"""
    {_log(f"SELECT organization_id, {moment} FROM ({changed}) AS c")}
    v_ids := ARRAY(SELECT id FROM ({changed}) AS c);
    v_level := ARRAY(SELECT DISTINCT parent_run_id FROM ({changed}) AS c
        WHERE parent_run_id IS NOT NULL);
    v_related := v_level;
    v_level := ARRAY(SELECT DISTINCT parent_run_id FROM runs_run
        WHERE id IN (SELECT unnest(v_level)) AND parent_run_id IS NOT NULL);
    v_related := v_related || v_level;
    v_level := ARRAY(SELECT DISTINCT parent_run_id FROM runs_run
        WHERE id IN (SELECT unnest(v_level)) AND parent_run_id IS NOT NULL);
    v_related := v_related || v_level;{walk_down}
    IF cardinality(v_related) > 0 THEN
        {_log(f"SELECT organization_id, {moment} FROM runs_run WHERE id IN (SELECT unnest(v_related))")}
    END IF;
    """


RUN_COLUMNS = (
    "id organization_id parent_run_id agent_id agent_version_id user_id model_provider status "
    "surface cost_usd cost_is_partial input_tokens output_tokens created_at started_at ended_at"
).split()
LEDGER_COLUMNS = "id run_id cost_usd cost_is_partial input_tokens output_tokens".split()
ENTRY_COLUMNS = (
    "id ledger_id organization_id agent_id kind cost_usd priced month created_at".split()
)
RATING_COLUMNS = "id run_id thumb".split()


def _changed_rows(columns: list[str]) -> str:
    """An UPDATE's rows whose figures-relevant columns changed, old and new versions both."""
    old = ", ".join(f"o.{c}" for c in columns)
    new = ", ".join(f"n.{c}" for c in columns)
    return (
        f"SELECT o.* FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE ({old}) IS DISTINCT FROM ({new}) "
        f"UNION ALL SELECT n.* FROM old_rows o JOIN new_rows n ON n.id = o.id "
        f"WHERE ({old}) IS DISTINCT FROM ({new})"
    )


def _through_runs(rows: str) -> str:
    """The runs the ledger (or rating) rows ``rows`` belong to, looked up by primary key."""
    return (
        "SELECT id, organization_id, parent_run_id, started_at, created_at FROM runs_run "
        f"WHERE id IN (SELECT run_id FROM ({rows}) AS x)"
    )


def _entry_days(rows: str) -> str:
    return _log(f"SELECT e.organization_id, e.created_at FROM ({rows}) AS e")


# table -> (the plpgsql logging the days a set of rows ``{rows}`` moves, the columns an UPDATE
# must change to count)
TABLES = {
    "runs_run": (lambda rows: _run_days(f"SELECT * FROM ({rows}) AS r"), RUN_COLUMNS),
    "spend_ledger": (
        lambda rows: _run_days(_through_runs(rows), descendants=False),
        LEDGER_COLUMNS,
    ),
    "spend_ledgerentry": (_entry_days, ENTRY_COLUMNS),
    "message_ratings": (
        lambda rows: _run_days(_through_runs(rows), descendants=False),
        RATING_COLUMNS,
    ),
}


def _forward() -> list:
    statements: list = ["CREATE SEQUENCE IF NOT EXISTS spend_day_change_seq"]
    for table, (days, columns) in TABLES.items():
        for op, rows, referencing in (
            ("insert", "SELECT * FROM new_rows", "NEW TABLE AS new_rows"),
            ("update", _changed_rows(columns), "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
            ("delete", "SELECT * FROM old_rows", "OLD TABLE AS old_rows"),
        ):
            name = f"spend_day_{table}_{op}"
            statements.append(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "DECLARE v_ids bigint[]; v_level bigint[]; v_related bigint[]; "
                f"BEGIN {days(rows)} RETURN NULL; END $$"
            )
            statements.append(
                f"CREATE TRIGGER {name} AFTER {op.upper()} ON {table} REFERENCING {referencing} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
            )
    return statements


def _backward() -> list:
    statements: list = []
    for table in TABLES:
        for op in ("insert", "update", "delete"):
            statements.append(f"DROP TRIGGER IF EXISTS spend_day_{table}_{op} ON {table}")
            statements.append(f"DROP FUNCTION IF EXISTS spend_day_{table}_{op}()")
    statements.append("DROP SEQUENCE IF EXISTS spend_day_change_seq")
    return statements


class Migration(migrations.Migration):
    dependencies = [
        ("spend", "0006_spend_day_rollup"),
        ("runs", "0008_run_org_started_idx"),
        ("ratings", "0001_initial"),
    ]

    operations = [migrations.RunSQL(_forward(), _backward())]
