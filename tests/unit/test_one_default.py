"""One setting, one default: the classes and functions built from settings at the edge take each setting's default
from the settings model (core.settings), never a copy of it. A default that differs from its setting's is caught
here, for any field or parameter named like a setting, present or future."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from core.serving.classifier import ChampionService
from core.settings.config import Settings, read_settings
from web.admin.actions import AdminActions, AdminPolicy
from web.server.api import build_api
from web.server.asgi import ServerOptions
from web.server.serving import PageLimits

# Parameters whose name is not the setting's own (the setting is named where the parameter's meaning needs it).
ALIASES = {"threads": "onnx_threads", "check_interval_s": "reload_interval_s", "session_minutes": "admin_session_minutes",
           "admins": "admin_list"}


def _setting_defaults() -> dict[str, list[Any]]:
    """Each setting's default, by field name (a few names, such as epochs, are a setting in two sections), and
    each section's values derived from them (e.g. admin_list, the parsed admins)."""
    defaults: dict[str, list[Any]] = {}
    settings = read_settings({})  # no environment: every setting at its default
    for section_name in Settings.model_fields:
        section = getattr(settings, section_name)
        derived = [name for name, member in vars(type(section)).items() if isinstance(member, property)]
        for name in [*type(section).model_fields, *derived]:
            defaults.setdefault(name, []).append(getattr(section, name))
    return defaults


def _defaults(target: type | Callable[..., Any]) -> dict[str, Any]:
    """The defaults of a dataclass's fields, or of a function's (or a class's __init__'s) parameters."""
    if dataclasses.is_dataclass(target):
        return {f.name: f.default for f in dataclasses.fields(target) if f.default is not dataclasses.MISSING}
    return {name: p.default for name, p in inspect.signature(target).parameters.items()
            if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("target", [PageLimits, ServerOptions, build_api, ChampionService, AdminActions,
                                    AdminPolicy],
                         ids=lambda target: target.__name__)
def test_no_default_differs_from_its_settings(target: type | Callable[..., Any]) -> None:
    settings = _setting_defaults()
    named = {name: ALIASES.get(name, name) for name in _defaults(target)}
    differ = {name: (default, settings[named[name]]) for name, default in _defaults(target).items()
              if named[name] in settings and default not in settings[named[name]]}
    assert differ == {}, f"{target.__name__}: (default, setting's default) of each that differs"


def test_the_page_limits_are_the_settings_every_field() -> None:
    # Every field is a setting, and from_settings passes each one on (none left at its default).
    settings = read_settings({}, max_input_chars=1234, classify_per_minute=7, queue_per_minute=9,
                             session_capacity=55, session_memory_mb=3.0)
    limits = PageLimits.from_settings(settings)
    by_name = {name: getattr(getattr(settings, section), name)
               for section in Settings.model_fields for name in type(getattr(settings, section)).model_fields}
    assert {f.name: getattr(limits, f.name) for f in dataclasses.fields(PageLimits)} == {
        f.name: by_name[f.name] for f in dataclasses.fields(PageLimits)
    }
    assert limits.session_memory_bytes == 3 * 1024 * 1024
