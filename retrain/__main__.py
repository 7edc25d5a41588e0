"""`python -m retrain {bootstrap,run,rollback,watch,evaluate,status,baseline,starter}`: the alias of `newsloop`'s
model commands (`run` is `newsloop retrain`) that cron jobs, the app's schedule and the admin view's jobs call."""

from __future__ import annotations

import sys

from retrain.cli import main
from retrain.commands import EXIT_BUSY, EXIT_FAILED, EXIT_OK, EXIT_REFUSED

__all__ = ["EXIT_BUSY", "EXIT_FAILED", "EXIT_OK", "EXIT_REFUSED", "main"]

if __name__ == "__main__":
    sys.exit(main())
