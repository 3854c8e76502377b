"""Tasks that services enqueue by name (so a service never imports the tasks that call it) are
registered in every process once Django is set up — a web process included, which imports no
``tasks.py`` of its own accord. Checked in a fresh interpreter: the suite itself imports them."""

import subprocess
import sys

CHECK = """
import django
django.setup()
from celery import current_app
from apps.runs import queue
from apps.knowledge.services import INDEX_DOCUMENT_TASK
from apps.triggers.services import DRIVE_FIRE_TASK
from apps.channels.services import ANNOUNCE_TASK, HANDLE_TASK
missing = [n for n in (queue.EXECUTE_RUN, queue.RESUME_RUN, DRIVE_FIRE_TASK, INDEX_DOCUMENT_TASK,
                       HANDLE_TASK, ANNOUNCE_TASK)
           if n not in current_app.tasks]
print("missing:", missing)
raise SystemExit(1 if missing else 0)
"""


def test_tasks_enqueued_by_name_are_registered_in_a_fresh_process():
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        env={"DJANGO_SETTINGS_MODULE": "agenticos.settings.base", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
