"""What the server last sent each admin tab, so a reload that brings nothing new leaves the tab's inputs alone.

The admin view is reloaded after sign-in, Refresh and changes in other panels, while the maintainer may be ticking,
typing or choosing. A Gradio update replaces an input with a value computed from what was read when the reload was
sent, so one that restates what the tab already holds would still undo what was done in between. A panel asks
`swap` what it sent the tab last, and leaves the input untouched when nothing it shows has changed since.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

TABS = 64  # tabs remembered, least recently reloaded forgotten first: only a signed-in admin's handler reaches here


class TabMemory:
    """One panel's memory: a value per tab (Gradio's session hash), thread-safe, bounded."""

    def __init__(self, tabs: int = TABS) -> None:
        self._tabs = tabs
        self._sent: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def swap(self, request: Any, value: Any) -> Any | None:
        """Remember `value` as what `request`'s tab was sent now; return what it was sent before (None: nothing yet,
        or a call from no tab, such as a script or a test)."""
        tab = str(getattr(request, "session_hash", None) or "")
        if not tab:
            return None
        with self._lock:
            before = self._sent.pop(tab, None)
            self._sent[tab] = value
            while len(self._sent) > self._tabs:
                self._sent.popitem(last=False)
        return before
