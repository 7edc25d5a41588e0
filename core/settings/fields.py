"""How a settings section and its fields are declared: a field is either a setting (read from the environment,
with a description) or internal (a default the code may change, never read from the environment).

A setting's environment variable is `NEWSLOOP_` + its section's prefix + its field name, upper-cased, unless the
field names its own (`env=`): names users' deployments already set never change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

_KEY = "newsloop"  # the key of a field's json_schema_extra that holds how it is read


class Section(BaseModel):
    """A frozen, validated group of settings or policy values; unknown names are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def with_(self, **changes: Any) -> Self:
        """A validated copy with `changes` (field names of this class)."""
        return type(self).model_validate(self.model_dump() | changes)

    @classmethod
    def field_default(cls, name: str) -> Any:
        """The default of field `name`. Code outside the settings that needs a setting's default (a class built
        from settings at the edge, used bare by tests) takes it from here, so each default is written once."""
        return cls.model_fields[name].get_default(call_default_factory=True)


def setting(
    default: Any = PydanticUndefined,
    *,
    description: str,
    env: str | None = None,
    fallback: tuple[str, ...] = (),
    on_space: Any = None,
    default_factory: Callable[[], Any] | None = None,
    default_text: str | None = None,
    secret: bool = False,
    **bounds: Any,
) -> Any:
    """A setting read from the environment. `env`: its own variable name without `NEWSLOOP_`, ignoring the section
    prefix; `fallback`: full names of other variables read when it is unset (e.g. GRADIO_SERVER_PORT); `on_space`:
    its default on a Hugging Face Space; `default_text`: the default in words where a factory computes it; `secret`:
    never shown (SecretStr fields always are)."""
    extra = {"setting": True, "env": env, "fallback": list(fallback), "on_space": on_space,
             "default_text": default_text, "secret": secret}
    if default_factory is not None:
        return Field(default_factory=default_factory, description=description, json_schema_extra={_KEY: extra},
                     **bounds)
    return Field(default, description=description, json_schema_extra={_KEY: extra}, **bounds)


def internal(default: Any, **bounds: Any) -> Any:
    """A field that is not a setting: code may pass it, the environment never sets it."""
    return Field(default, json_schema_extra={_KEY: {"setting": False}}, **bounds)


@dataclass(frozen=True)
class FieldSpec:
    """How one field of a section is read: absent for internal fields (see `field_spec`)."""

    env: str | None  # the field's own variable name without NEWSLOOP_, or None for prefix + name
    fallback: tuple[str, ...]
    on_space: Any
    default_text: str | None


def field_spec(info: FieldInfo) -> FieldSpec | None:
    """The field's reading rules, or None when it is internal. A field declared without `setting()` or `internal()`
    counts as a setting (without a description, which the tests refuse)."""
    extra = info.json_schema_extra
    spec = extra.get(_KEY) if isinstance(extra, dict) else None
    if not isinstance(spec, dict):
        return FieldSpec(None, (), None, None)
    if not spec.get("setting"):
        return None
    fallback = spec.get("fallback") or []
    return FieldSpec(
        env=str(spec["env"]) if spec.get("env") else None,
        fallback=tuple(str(name) for name in fallback) if isinstance(fallback, list) else (),
        on_space=spec.get("on_space"),
        default_text=str(spec["default_text"]) if spec.get("default_text") else None,
    )
