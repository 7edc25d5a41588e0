"""The page's footer names the model served, and says so plainly when there is none: a service over an empty
registry raises NoChampionError from `model`, which the footer must catch (getattr's default does not)."""

from __future__ import annotations

from pathlib import Path

from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService
from testkit.models import tiny_settings
from web.page.actions import NO_MODEL_NOTE, NewsLoopActions
from web.page.tabs import build_page
from web.server.identity import IdentityService
from web.server.serving import PageLimits


def _actions(home: Path) -> NewsLoopActions:
    settings = tiny_settings(home)
    service = ChampionService(ModelRegistry(settings.paths.models_dir))
    return NewsLoopActions(service, None, limits=PageLimits.from_settings(settings), queue=settings.queue,
                           identities=IdentityService(b"a-footer-test-key-of-32-bytes..."))


def _footer(actions: NewsLoopActions) -> str:
    demo = build_page(actions, examples=())
    [note] = [block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "model-note"]
    return str(note.value)


def test_the_footer_says_no_model_is_served_without_a_champion(tmp_path: Path) -> None:
    actions = _actions(tmp_path / "home")  # an empty registry: no champion, no starter installed
    assert actions.model_note() == NO_MODEL_NOTE
    assert _footer(actions) == NO_MODEL_NOTE  # the page builds, footer and all, with nothing to serve


def test_the_footer_names_the_champion_and_its_data(tiny_champion_home: Path) -> None:
    note = _actions(tiny_champion_home).model_note()
    assert note.startswith("Serving model **v0001**, trained on ") and NO_MODEL_NOTE not in note
