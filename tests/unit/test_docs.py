"""The README documents the settings and commands the code really has."""

from __future__ import annotations

import re

from core.settings.config import PROJECT_ROOT, Settings
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


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_readme_layout_names_every_module_and_only_existing_ones() -> None:
    layout = _section("Layout")
    listed = set(re.findall(r"`((?:core|feedback|retrain|web|bench)/[\w/]+\.py|app\.py)`", layout))
    actual = {"app.py"} | {
        str(path.relative_to(PROJECT_ROOT))
        for package in ("core", "feedback", "retrain", "web", "bench")
        for path in (PROJECT_ROOT / package).rglob("*.py")
        if path.name != "__init__.py"
    }
    assert listed == actual


def test_every_product_module_says_its_job_on_its_first_line() -> None:
    import ast

    missing = []
    for package in ("core", "feedback", "retrain", "web"):
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))):
                missing.append(str(path.relative_to(PROJECT_ROOT)))
    assert missing == []
