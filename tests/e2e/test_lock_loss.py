"""The app keeps its SQLite locks while another process reads, checkpoints and closes the database.

A launched app (this process) serves every kind of request, hostile ones included, while a second process
opens the database, reads it, runs `PRAGMA wal_checkpoint(TRUNCATE)` and closes it, over and over, as
`python -m feedback stats` or a backup would. Were the app to drop its POSIX locks (any descriptor of the
file opened and closed outside SQLite does that: a hash, a copy, a file route), that process would take
itself for the last user and delete the -wal and -shm files from under the app: "disk I/O error", lost
answers. Before the upload guard a visitor could cause it by naming the database as an upload's path.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from core.labels import LABELS
from core.storage.durable import snapshots
from core.storage.snapshot_schedule import SnapshotSchedule
from feedback.store import FeedbackStore
from testkit.models import tiny_settings
from testkit.server import launched_app
from tests.e2e.raw_http import ADMIN, EventError, Visitor
from tests.unit.test_sqlite_guard import held_locks

pytestmark = pytest.mark.e2e

PASSWORD = "lock loss"
# Opens, reads, checkpoints and closes the database until the stop file appears; prints how many times.
READER = textwrap.dedent("""
    import os, sqlite3, sys, time
    path, stop = sys.argv[1], sys.argv[2]
    rounds = 0
    while not os.path.exists(stop):
        conn = sqlite3.connect(path, timeout=10)
        conn.execute("SELECT COUNT(*) FROM answers").fetchone()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        conn.close()
        rounds += 1
        time.sleep(0.005)
    print(rounds)
""")


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def sign_in(admin: Visitor) -> None:
    """As the admin page does: the login event's ticket, redeemed for a fresh browser id (web.admin.routes)."""
    message, ticket = admin.call("login", PASSWORD)
    redeemed = admin.post("/admin/session", json={"ticket": ticket})
    assert redeemed.status_code == 200, (message, redeemed.text)
    admin.adopt(redeemed)


def test_another_process_checkpointing_while_the_app_serves_everything_loses_nothing(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(tiny_champion_home, home)
    settings = tiny_settings(home, admin_password=SecretStr(PASSWORD), classify_per_minute=1000,
                             queue_per_minute=1000, address_feedback_per_minute=1000, feedback_per_minute=1000)
    db = settings.paths.feedback_db
    store = FeedbackStore.from_settings(settings)
    store.pool.add([f"Pool story {i} on ministers, markets and matches" for i in range(40)], source="pool")
    schedule = SnapshotSchedule(settings.paths, tmp_path / "durable", interval_s=0.3)  # snapshots meanwhile
    schedule.start()
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db), str(stop)], stdout=subprocess.PIPE, text=True)
    acknowledged: set[tuple[str, str]] = set()
    try:
        with launched_app(settings, store) as (url, _):
            user, admin, stranger = Visitor(url), Visitor(url), Visitor(url)
            sign_in(admin)
            own_files = [str(db), f"{db}-wal", f"{db}-shm", f"{home}/../{home.name}/feedback.db", str(home / "secret_key")]
            for i in range(4):
                text = f"Story {i}: the league, the budget and a new chip"
                label = LABELS[i % 4]
                _, _, shown = user.call("classify", text)
                message = user.call("feedback", label, shown, text)[0]
                assert "saved as" in message.lower(), message
                acknowledged.add((text, label))

                item, _, _, shown = user.call("queue_next")[0]
                item_text, _, message, shown = user.call("queue_answer", LABELS[(i + 1) % 4], shown)[0]
                assert message.startswith("Saved as"), message
                acknowledged.add((item, LABELS[(i + 1) % 4]))
                user.call("queue_skip", shown)
                assert httpx.post(f"{url}api/v1/classify", json={"text": [text, item_text]}, timeout=30).status_code == 200

                # The state directory through Gradio's file routes, and as the path of an upload: refused, and
                # nothing outside SQLite ever opens the database (core.storage.sqlite_guard would refuse that too).
                for path in [*own_files, f"/proc/self/fd/{i + 3}"]:
                    assert stranger.get(f"/gradio_api/file={path}").status_code in (403, 404)
                for visitor in (stranger, admin):
                    try:
                        message = visitor.call("import_pool", file_data(own_files[i % 3]), False, False)[0]
                    except EventError:
                        continue  # Gradio refused the path itself
                    assert message in ("Sign in first.", "Choose a CSV or JSONL file."), message

                uploaded = admin.post(f"{ADMIN}/gradio_api/upload", files={"files": (f"pool{i}.csv", f"text\nUploaded {i}\n")})
                assert uploaded.status_code == 200
                assert admin.call("import_pool", file_data(uploaded.json()[0]), False, False)[0].startswith("Imported 1")
                link = admin.call("export", "csv")[0]
                download = admin.get(f"{ADMIN}/" + link.split('href="', 1)[1].split('"', 1)[0])
                assert download.status_code == 200 and download.text.startswith("id,")
                assert held_locks(db) >= {"feedback.db", "feedback.db-shm"}, f"round {i}: the app lost its locks"
            assert admin.call("overview")[0].startswith("Champion")  # the admin view reads everything once
    finally:
        stop.touch()
        rounds = int(reader.communicate(timeout=60)[0].strip() or 0)
        schedule.stop()
    assert reader.returncode == 0 and rounds > 0
    assert snapshots(tmp_path / "durable")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        stored = set(conn.execute("SELECT text, user_label FROM answers").fetchall())
    assert acknowledged <= stored and len(acknowledged) == 8
