"""Every product function fits on a screen (at most 60 lines, 8 parameters), except those the contributing guide's
table "Long functions, and why" names; that table is the one list of exceptions, and a stale row fails too."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from core.settings.config import PROJECT_ROOT

MAX_LINES = 60
MAX_PARAMETERS = 8
# The product code; tests/, testkit/ and bench/ are not held to it.
PRODUCT = ["core", "feedback", "retrain", "web", "newsloop", "app.py"]
GUIDE = PROJECT_ROOT / "docs" / "contributing" / "index.md"
SECTION = "## Long functions, and why"



def _product_files() -> list[Path]:
    files: list[Path] = []
    for name in PRODUCT:
        path = PROJECT_ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _functions(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under `node` with its dotted name (methods under their class, inner functions under theirs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}.{child.name}", child
            yield from _functions(child, f"{prefix}.{child.name}")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}.{child.name}")
        else:
            yield from _functions(child, prefix)


def _lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """From `def` to the last line of the body: decorators do not count (`lineno` is the `def` line's)."""
    assert function.end_lineno is not None
    return function.end_lineno - function.lineno + 1


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter, keyword-only, *args and **kwargs included; `self` and `cls` are not counted."""
    args = function.args
    named = [arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs] if arg.arg not in ("self", "cls")]
    return len(named) + (args.vararg is not None) + (args.kwarg is not None)


def _sizes() -> dict[str, tuple[int, int]]:
    """Every product function's dotted name -> (lines, parameters)."""
    sizes = {}
    for path in _product_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, function in _functions(tree, _module_name(path)):
            sizes[name] = (_lines(function), _parameters(function))
    return sizes


def _over(size: tuple[int, int]) -> bool:
    return size[0] > MAX_LINES or size[1] > MAX_PARAMETERS


def _excused() -> list[str]:
    """The backticked dotted names in the first column of the guide's table "Long functions, and why"."""
    text = GUIDE.read_text(encoding="utf-8")
    assert SECTION in text, f"{GUIDE.name} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    names = []
    for row in rows[2:]:  # past the header and its |---| line
        first = row.strip("|").split("|", 1)[0]
        match = re.fullmatch(r"\s*`([\w.]+)`\s*", first)
        assert match, f"a row of the table names no function in its first column: {row}"
        names.append(match.group(1))
    assert names, "the table of long functions has no rows"
    return names


def test_every_product_function_fits_or_is_excused_in_the_guide() -> None:
    sizes = _sizes()
    allowed = set(_excused())
    too_big = [f"{name}: {lines} lines, {parameters} parameters" for name, (lines, parameters) in sorted(sizes.items())
               if _over((lines, parameters)) and name not in allowed]
    assert too_big == [], (
        f"over {MAX_LINES} lines or {MAX_PARAMETERS} parameters: split them, or add a row with why to "
        f"{GUIDE.relative_to(PROJECT_ROOT)} ({SECTION[3:]}):\n" + "\n".join(too_big))


def test_every_exception_in_the_guide_still_names_a_long_function() -> None:
    sizes = _sizes()
    excused = _excused()
    assert len(excused) == len(set(excused)), f"a function is named twice in the table: {excused}"
    stale = [f"{name}: no such function" if name not in sizes else f"{name}: fits now ({sizes[name][0]} lines, "
             f"{sizes[name][1]} parameters)" for name in excused
             if name not in sizes or not _over(sizes[name])]
    assert stale == [], "remove these from the table:\n" + "\n".join(stale)
