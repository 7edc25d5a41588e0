"""The README documents the settings and commands the code really has."""

from __future__ import annotations

import re

from core.config import PROJECT_ROOT, Settings
from retrain.__main__ import build_parser

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented_and_every_documented_setting_exists() -> None:
    documented = set(re.findall(r"`(NEWSLOOP_[A-Z0-9_]+)`", README))
    actual = {f"NEWSLOOP_{name.upper()}" for name in Settings.model_fields}
    assert documented == actual


def test_retrain_commands_in_readme_exist() -> None:
    parser = build_parser()
    subcommands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    documented = set(re.findall(r"python -m retrain (\w+)", README))
    assert documented and documented <= subcommands


def test_readme_has_spaces_front_matter_for_app_py() -> None:
    front = README.split("---")[1]
    assert "sdk: gradio" in front and "app_file: app.py" in front
