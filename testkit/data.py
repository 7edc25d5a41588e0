"""Where the offline AG News CSVs lie for tests (NEWSLOOP_TEST_AG_NEWS, else ../shared/data/ag_news)."""

from __future__ import annotations

import os
from pathlib import Path

from core.settings.config import PROJECT_ROOT

SHARED_AG_NEWS = Path(os.environ.get("NEWSLOOP_TEST_AG_NEWS", PROJECT_ROOT.parent / "shared" / "data" / "ag_news"))
