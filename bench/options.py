"""The one way a benchmark builds its command line: the script's docstring as its help (first paragraph as the
description, the rest, with the command that reproduces each figure, as the epilog), and the options several
benchmarks share, each defined once."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from core.registry.starter import STARTER_DIR
from core.settings.policies import DataSource

DEFAULT_DATA = "../shared/data/ag_news"  # the offline AG News CSVs beside a checkout, when NEWSLOOP_DATA is unset


def parser(doc: str | None, prog: str | None = None) -> argparse.ArgumentParser:
    """An ArgumentParser whose help is the benchmark's docstring, kept as written."""
    first, _, rest = (doc or "").strip().partition("\n\n")
    return argparse.ArgumentParser(prog=prog, description=first, epilog=rest or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def default_data() -> str:
    """The AG News folder a benchmark reads: NEWSLOOP_DATA, else the offline CSVs beside the checkout."""
    return os.environ.get("NEWSLOOP_DATA") or DEFAULT_DATA


def add_data(parser: argparse.ArgumentParser, *, required: bool = False, as_path: bool = False) -> None:
    """`--data`: a folder holding an AG-News-format train.csv (default NEWSLOOP_DATA, else ../shared)."""
    kind = Path if as_path else str
    if required:
        parser.add_argument("--data", type=kind, required=True, help="folder holding AG News train.csv")
    else:
        parser.add_argument("--data", type=kind, default=None if not as_path else Path(default_data()),
                            help=f"folder holding AG News train.csv (default NEWSLOOP_DATA, else {DEFAULT_DATA})")


def add_model(parser: argparse.ArgumentParser) -> None:
    """`--model`: an exported model directory (default: the shipped starter)."""
    parser.add_argument("--model", type=Path, default=STARTER_DIR,
                        help="an exported model directory (default: the shipped starter)")


def add_val_fraction(parser: argparse.ArgumentParser) -> None:
    """`--val-fraction`: the share of the data carved out as validation (default: the setting's own)."""
    default = DataSource.field_default("val_fraction")
    parser.add_argument("--val-fraction", type=float, default=default,
                        help=f"share of the data held out for validation (default {default}, the setting's default)")
