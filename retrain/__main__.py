"""`python -m retrain {bootstrap,run,rollback,watch,evaluate,status,baseline,starter}`: the alias of `newsloop`'s
model commands (`run` is `newsloop retrain`) that cron jobs, the app's schedule and the admin view's jobs call."""

from __future__ import annotations

import sys

from retrain.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
