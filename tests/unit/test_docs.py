"""The README and the docs site say only what the code has: the generated reference pages are current, and every
command, setting and link the prose names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

from core.command_line import ExitCode
from core.settings.config import PROJECT_ROOT, Settings, setting_fields
from core.settings.fields import Section, setting
from core.settings.reference import configuration_markdown
from newsloop import reference
from newsloop.cli import cli as newsloop_cli
from retrain.cli import alias as retrain_alias

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
DOCS = PROJECT_ROOT / "docs"
PROSE = {"README.md": README} | {
    str(path.relative_to(PROJECT_ROOT)): path.read_text(encoding="utf-8")
    for path in DOCS.rglob("*.md") if "reference" not in path.parts
}


def test_reference_pages_match_the_code() -> None:
    assert reference.stale_pages() == [], "run `python -m newsloop.reference` and commit docs/reference/"


def test_a_setting_added_without_regenerating_makes_the_configuration_page_stale() -> None:
    class Extra(Section):
        brand_new_knob: int = setting(3, ge=1, description="A knob nobody documented.")

    class MoreSettings(Settings):
        extra: Extra = Extra()

    page = (reference.REFERENCE_DIR / "configuration.md").read_text(encoding="utf-8")
    regenerated = configuration_markdown(MoreSettings)
    assert regenerated != page
    assert "`NEWSLOOP_BRAND_NEW_KNOB` | int | `3` | >= 1 | A knob nobody documented." in regenerated
    assert "NEWSLOOP_BRAND_NEW_KNOB" not in page


def test_every_setting_is_on_the_configuration_page_with_its_description() -> None:
    page = (reference.REFERENCE_DIR / "configuration.md").read_text(encoding="utf-8")
    for item in setting_fields():
        assert item.info.description, f"{item.env} has no description"
        assert f"`{item.env}`" in page


def test_a_command_added_without_regenerating_makes_the_cli_page_stale() -> None:
    @click.command(help="A command nobody documented.")
    def brand_new() -> None:
        pass

    group = click.Group("newsloop", commands={**newsloop_cli.commands, "brand-new": brand_new},
                        help=newsloop_cli.help, params=newsloop_cli.params)
    page = (reference.REFERENCE_DIR / "cli.md").read_text(encoding="utf-8")
    assert reference.cli_markdown(group) != page
    assert "## newsloop brand-new" in reference.cli_markdown(group)
    for name in newsloop_cli.commands:
        assert f"## newsloop {name}\n" in page


def test_the_cli_page_lists_every_exit_status_with_its_meaning() -> None:
    page = (reference.REFERENCE_DIR / "cli.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {code.value} | `{code.name}` | {code.meaning} |" in page
    assert len({code.meaning for code in ExitCode}) == len(ExitCode)


def test_readme_is_short_and_starts_with_install_run_and_test() -> None:
    lines = README.splitlines()
    assert len(lines) <= 200
    head = "\n".join(lines[:40])
    assert "pip install -r requirements-dev.txt" in head
    assert "newsloop serve" in head or "python app.py" in head
    assert "python -m pytest" in head


def test_readme_has_spaces_front_matter_for_app_py() -> None:
    front = README.split("---")[1]
    assert "sdk: gradio" in front and "app_file: app.py" in front


@pytest.mark.parametrize("name", sorted(PROSE))
def test_prose_names_only_commands_and_settings_that_exist(name: str) -> None:
    text = PROSE[name]
    subcommands = set(newsloop_cli.commands)
    named = set(re.findall(r"`newsloop ([a-z][a-z-]+)", text))
    assert named <= subcommands, f"{name}: unknown newsloop subcommands {sorted(named - subcommands)}"
    aliases = set(re.findall(r"python -m retrain ([a-z]+)", text))
    assert aliases <= set(retrain_alias.commands), f"{name}: unknown retrain subcommands"
    settings = {item.env for item in setting_fields()} | {"NEWSLOOP_ENV_FILE", "NEWSLOOP_TEST_AG_NEWS",
                                                           "NEWSLOOP_QUALITY_HOME"}
    documented = set(re.findall(r"\b(NEWSLOOP_[A-Z0-9_]*[A-Z0-9])\b", text))
    assert documented <= settings, f"{name}: unknown settings {sorted(documented - settings)}"


@pytest.mark.parametrize("name", sorted(PROSE))
def test_prose_has_no_issue_numbers(name: str) -> None:
    assert not re.search(r"(?<![\w&/])#\d{1,4}\b(?!;)|\bissue \d+", PROSE[name], re.IGNORECASE)


def test_relative_links_in_readme_resolve() -> None:
    for target in re.findall(r"\]\((?!https?:|#|mailto:)([^)#\s]+)", README):
        assert (PROJECT_ROOT / target).exists(), f"README links to missing {target}"


def test_every_product_module_says_its_job_on_its_first_line() -> None:
    missing = []
    for package in ("core", "feedback", "retrain", "web", "newsloop"):
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))):
                missing.append(str(Path(path).relative_to(PROJECT_ROOT)))
    assert missing == []
