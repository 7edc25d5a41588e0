"""`python -m feedback {import,export,stats,tables,review}`: the alias of `newsloop`'s feedback commands, for cron
jobs and scripts that call it."""

from __future__ import annotations

import sys

from feedback.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
