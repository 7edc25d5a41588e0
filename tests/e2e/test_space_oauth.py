"""Hugging Face sign-in on a launched app configured as a Space (`python app.py` with the variables a Space with
`hf_oauth: true` sets): Gradio's own OAuth routes, session middleware and secret, reached over HTTP with a
validly signed session cookie (testkit/oauth.py), no network. Checked in the app's own database."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.host.net import free_port
from core.labels import LABELS
from core.settings.config import PROJECT_ROOT
from feedback.store import FeedbackStore
from testkit.models import MANY_PAGES_ENV
from testkit.oauth import SESSION_COOKIE, signed_session_cookie, space_oauth_env
from tests.e2e.raw_http import ADMIN as ADMIN_PAGE
from tests.e2e.raw_http import Visitor

pytestmark = pytest.mark.e2e

ADMIN = "boss"
STALE = "This result is no longer on screen: classify the text again."


@dataclass
class Space:
    url: str
    home: Path
    log: Path

    def visitor(self, user: str | None = None, *, address: str | None = None, **cookie: object) -> Visitor:
        """A browser: it gets its NewsLoop id first, then (for `user`) the session a Hugging Face sign-in leaves.
        `address` is the client address the Space's proxy reports (X-Forwarded-For)."""
        visitor = Visitor(self.url, forwarded_for=address)
        visitor.get("/")
        assert visitor.cookie and visitor.cookie.startswith("newsloop_id=")
        if user is not None:
            visitor.cookie += f"; {SESSION_COOKIE}={signed_session_cookie(user, **cookie)}"  # type: ignore[arg-type]
        return visitor

    def rows(self, text: str) -> list[dict]:
        store = FeedbackStore(self.home / "feedback.db")
        try:
            return [row for row in store.answers.rows() if row["text"] == text]
        finally:
            store.close()


@pytest.fixture(scope="module")
def space(tiny_champion_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Space]:
    root = tmp_path_factory.mktemp("space_oauth")
    home = root / "home"
    shutil.copytree(tiny_champion_home, home)
    store = FeedbackStore(home / "feedback.db")
    store.pool.add([f"Queue article {i}: a port strike, a cup final, a rate cut and a chip plant" for i in range(150)],
                      source="test")
    store.close()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "OAUTH_", "SPACE_"))}
    env |= space_oauth_env() | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": "seed", "NEWSLOOP_MAX_LENGTH": "64",
        "NEWSLOOP_DURABLE_DIR": "", "NEWSLOOP_PORT": str(port), "NEWSLOOP_HOST": "127.0.0.1",
        "NEWSLOOP_ADMINS": ADMIN, "NEWSLOOP_ONNX_THREADS": "1",
        "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT_ROOT),
        **MANY_PAGES_ENV,  # every simulated browser comes from loopback
    }
    log = root / "app.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=out, stderr=out,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"the app exited early:\n{log.read_text()[-3000:]}"
            with contextlib.suppress(Exception):
                if Visitor(url).get("/config").status_code == 200:
                    break
            assert time.monotonic() < deadline, f"the app did not come up:\n{log.read_text()[-3000:]}"
            time.sleep(0.3)
        yield Space(url, home, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def answer(visitor: Visitor, text: str, label: str = "Business") -> str:
    label_out, _, shown = visitor.call("classify", text)
    assert label_out and shown
    return visitor.call("feedback", label, shown, text)[0]


def test_the_page_is_a_space_with_hugging_face_sign_in(space: Space) -> None:
    visitor = space.visitor()
    config = visitor.get("/config").json()
    buttons = [c["props"].get("value") for c in config["components"] if c.get("type") == "button"]
    assert "Sign in with Hugging Face" in buttons  # gr.LoginButton
    # Gradio's own OAuth routes are attached: the real ones (the local mock would need a Hub token to start).
    assert visitor.http.get("/logout", follow_redirects=False).status_code in (302, 307)
    assert visitor.http.get("/login/huggingface", follow_redirects=False).status_code != 404
    # The maintainers' page has its own button (an account on NEWSLOOP_ADMINS signs in there without a password).
    # (a fresh connection: the sign-in route above leaves its own closed)
    admin_config = space.visitor().get(f"{ADMIN_PAGE}/config").json()
    assert "Sign in with Hugging Face" in [c["props"].get("value") for c in admin_config["components"]
                                           if c.get("type") == "button"]


def test_a_signed_in_answer_is_stored_as_that_account_verified(space: Space) -> None:
    text = "Signed-in labeller's story: the port strike ended after a new wage deal."
    assert answer(space.visitor("ada"), text).startswith("Thanks, saved as **Business**")
    rows = space.rows(text)
    assert [(r["annotator"], r["verified"]) for r in rows] == [("user:ada", 1)]


@pytest.mark.parametrize(
    "who", ["nobody", "forged", "expired"], ids=["no sign-in", "cookie signed with another secret", "expired sign-in"]
)
def test_without_a_valid_sign_in_the_answer_is_anonymous(space: Space, who: str) -> None:
    cookie = {"forged": {"client_secret": "not the space's secret"}, "expired": {"expires_in_s": -60}}.get(who)
    visitor = space.visitor("ada", **cookie) if cookie else space.visitor()
    text = f"Anonymous story ({who}): the league postponed the final by a week."
    assert answer(visitor, text).startswith("Thanks, saved as")
    [row] = space.rows(text)
    assert row["annotator"].startswith("anon:") and not row["verified"]


def test_an_admins_account_gets_the_admin_view_and_may_upload(space: Space) -> None:
    admin, member, stranger = space.visitor(ADMIN), space.visitor("ada"), space.visitor()
    assert admin.call("restore")[0] == "Signed in."  # the panel opens on page load, no password
    assert admin.call("overview")[0] != "Sign in first."
    for other in (member, stranger):
        assert other.call("restore")[0] == ""
        assert other.call("overview")[0] == "Sign in first."
    pool = ("pool.csv", b"text\nA pool article an admin uploads from a Space\n")
    # The upload guard runs before Gradio (no injected profile there): it reads Gradio's session cookie itself.
    assert admin.post(f"{ADMIN_PAGE}/gradio_api/upload", files={"files": pool}).status_code == 200
    for other in (member, stranger):
        assert other.post(f"{ADMIN_PAGE}/gradio_api/upload", files={"files": pool}).status_code == 403
    expired = space.visitor(ADMIN, expires_in_s=-60)
    assert expired.post(f"{ADMIN_PAGE}/gradio_api/upload", files={"files": pool}).status_code == 403
    assert expired.call("restore")[0] == ""


def test_a_signed_in_labeller_is_not_stopped_at_the_anonymous_limit(space: Space) -> None:
    """60 queue answers in a burst (a fast keyboard labeller does 60 a minute) from a signed-in account all
    land; an anonymous browser id keeps the anonymous limit (NEWSLOOP_FEEDBACK_PER_MINUTE, 30)."""
    labeller = space.visitor("kim", address="203.0.113.60")
    shown = labeller.call("queue_next")[0][3]
    for i in range(60):
        _, _, message, shown = labeller.call("queue_answer", LABELS[i % 4], shown)[0]
        assert message.startswith("Saved as"), f"answer {i + 1}: {message}"
    stranger = space.visitor(address="203.0.113.61")
    shown, messages = stranger.call("queue_next")[0][3], []
    for _ in range(31):
        _, _, message, shown = stranger.call("queue_answer", "World", shown)[0]
        messages.append(message)
    assert all(m.startswith("Saved as") for m in messages[:30]) and "at most 30 a minute" in messages[30]
