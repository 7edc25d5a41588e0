"""`python -m newsloop ...`: the `newsloop` command where its console script is not installed."""

from __future__ import annotations

import sys

from newsloop.cli import main

if __name__ == "__main__":
    sys.exit(main())
