#!/usr/bin/env bash
# AgenticOS container entrypoint. The first argument is the role:
#
#   web      wait for PostgreSQL and Redis, `migrate`, `bootstrap`, then serve the ASGI app
#            (uvicorn on 0.0.0.0:8000). Only this role changes the database schema.
#   worker   wait for PostgreSQL and Redis and for web's migrations, then a Celery worker.
#   beat     same waits, then Celery beat (django-celery-beat's DatabaseScheduler). Run one.
#   channels same waits, then `agenticos channels-listen` (the Mattermost bots' websockets). One.
#   other    executed as given, no waiting (e.g. `agenticos audit-verify`, `python manage.py shell`).
#
# Extra arguments after a role go to its command (e.g. `worker --queues celery`).
set -euo pipefail

log() { echo "entrypoint[${role}]: $*" >&2; }

role="${1:-web}"
case "$role" in
  web|worker|beat|channels) shift || true ;;
  *) exec "$@" ;;
esac

# Without these every container would generate its own secrets under its own data directory
# (different vault keys in web and worker): refuse to start instead.
missing=0
for name in DATABASE_URL REDIS_URL SECRET_KEY AGENTICOS_VAULT_KEY AUDIT_CHECKPOINT_KEY; do
  if [ -z "${!name:-}" ]; then
    log "$name must be set (see docker/.env.example)"
    missing=1
  fi
done
[ "$missing" -eq 0 ] || exit 64

# Wait until PostgreSQL accepts a real connection and Redis answers PING.
log "waiting for PostgreSQL and Redis (up to ${AGENTICOS_WAIT_SECONDS:-120}s)"
python - <<'PY'
import os
import sys
import time

import psycopg
import redis

deadline = time.monotonic() + int(os.environ.get("AGENTICOS_WAIT_SECONDS", "120"))
pending = {"postgres", "redis"}
last_error = {}
while pending:
    if "postgres" in pending:
        try:
            psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=3).close()
            pending.discard("postgres")
        except Exception as exc:  # any failure means "not yet"
            last_error["postgres"] = exc
    if "redis" in pending:
        try:
            redis.Redis.from_url(os.environ["REDIS_URL"], socket_connect_timeout=3).ping()
            pending.discard("redis")
        except Exception as exc:
            last_error["redis"] = exc
    if not pending:
        break
    if time.monotonic() > deadline:
        for name in sorted(pending):
            error = last_error.get(name)
            print(f"entrypoint: {name} unreachable: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(69)
    time.sleep(1)
PY

if [ "$role" = "web" ]; then
  log "migrate"
  python manage.py migrate --noinput
  log "bootstrap"
  python manage.py bootstrap
else
  # Only web migrates; the others start once the schema is current.
  log "waiting for migrations to be applied by web (up to ${AGENTICOS_MIGRATION_WAIT_SECONDS:-600}s)"
  deadline=$(( SECONDS + ${AGENTICOS_MIGRATION_WAIT_SECONDS:-600} ))
  until output=$(python manage.py migrate --check --noinput 2>&1); do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "migrations still unapplied (is web running?); last output of migrate --check:"
      echo "$output" >&2
      exit 75
    fi
    sleep 3
  done
fi

case "$role" in
  web)
    exec uvicorn agenticos.asgi:application --host 0.0.0.0 --port 8000 "$@"
    ;;
  worker)
    # Many runs per process on one event loop: Celery's thread pool sized to the runs it holds.
    exec celery -A agenticos worker --loglevel "${LOG_LEVEL:-INFO}" --pool threads \
      --concurrency "${AGENTICOS_RUNS_PER_WORKER:-250}" "$@"
    ;;
  beat)
    exec celery -A agenticos beat --loglevel "${LOG_LEVEL:-INFO}" "$@"
    ;;
  channels)
    exec agenticos channels-listen "$@"
    ;;
esac
