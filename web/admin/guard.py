"""The one admin check: `admin_only` wraps every admin handler, so none can forget it.

A handler refuses (returns its `refused` value, changing nothing) unless its request comes from a signed-in
admin (`web.admin.actions.AdminActions.is_admin`) and carries that browser's anti-forgery token (`FORM_HEADER`, which
the page's script sends and another site cannot read: `web.server.identity`). Hiding the panel is not security: a script can call any event of
the page by its index, private ones included (tests/e2e/test_admin_guard.py calls every guarded one).
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

log = logging.getLogger("newsloop.app")
F = TypeVar("F", bound=Callable[..., Any])
SIGN_IN_FIRST = "Sign in first."
NO_STORE = "No feedback database on this server."  # a panel's answer on a server started without a store
GUARD_MARK = "__admin_only__"  # set on every guarded handler: tests find them by it


class AdminCheck(Protocol):
    def is_admin(self, request: Any, profile: Any = None) -> bool: ...

    def is_admin_event(self, request: Any, profile: Any = None) -> bool: ...


def _checker(owner: Any) -> AdminCheck:
    """The object whose `is_admin` decides: `AdminActions` itself, or a panel's `.admin`."""
    return owner if hasattr(owner, "is_admin") else owner.admin


def _guard(fn: F, refused: Any, owner_of: Callable[[inspect.BoundArguments], Any], page_event: bool = True) -> F:
    signature = inspect.signature(fn)
    if "request" not in signature.parameters:
        raise TypeError(f"{fn.__qualname__} takes no `request`: it cannot be checked")

    # functools.wraps keeps the signature and annotations Gradio reads to inject the request and profile.
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        owner = owner_of(bound)
        request, profile = bound.arguments.get("request"), bound.arguments.get("profile")
        checker = _checker(owner)
        if not (checker.is_admin_event(request, profile) if page_event else checker.is_admin(request, profile)):
            log.info("refused %s: not a signed-in admin's own page", fn.__qualname__)
            # A fresh value each time: Gradio may change an update dict it is handed.
            return refused(owner) if callable(refused) else copy.deepcopy(refused)
        return fn(*args, **kwargs)

    setattr(guarded, GUARD_MARK, True)
    return guarded  # type: ignore[return-value]  # same signature as `fn`, through functools.wraps


def admin_only(refused: Any = SIGN_IN_FIRST, *, page_event: bool = True) -> Callable[[F], F]:
    """Decorate a method of `AdminActions` or of a panel holding one as `.admin`. `refused` is what a
    stranger gets: a value, or a function of the owner (`self`) for values built from its components.
    `page_event=False` for a plain route the page links to (no script can add the token to a link), whose
    own secret in the URL shows the page made it."""

    def decorate(method: F) -> F:
        return _guard(method, refused, lambda bound: bound.arguments["self"], page_event)

    return decorate


def guarded_by(owner: Any, refused: Any = SIGN_IN_FIRST) -> Callable[[F], F]:
    """The same check for a closure made for one event (no `self`): `owner` decides."""

    def decorate(fn: F) -> F:
        return _guard(fn, refused, lambda bound: owner)

    return decorate


def is_guarded(fn: Any) -> bool:
    return bool(getattr(fn, GUARD_MARK, False))
