"""Logging at the project's edges (the command lines and the app's start): one format, and the libraries' own INFO
lines kept quiet unless -v/--verbose asks for everything."""

from __future__ import annotations

import logging
import os

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Libraries whose INFO lines (Alembic's migration context and plugin setup, MLflow's run links) say nothing a
# maintainer acts on, and drown the command's own lines: WARNING and above only, unless verbose.
QUIET_LIBRARIES = ("alembic", "mlflow")


def configure_logging(level: int = logging.INFO, *, verbose: bool = False, fmt: str = LOG_FORMAT) -> None:
    """Log the project's messages at `level` (DEBUG when `verbose`), and the QUIET_LIBRARIES at WARNING."""
    logging.basicConfig(level=logging.DEBUG if verbose else level, format=fmt)
    quiet = logging.DEBUG if verbose else logging.WARNING
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(quiet)
    # MLflow sets its loggers' levels again when it is imported, from this variable (child processes inherit it).
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", logging.getLevelName(quiet))
