"""The package boundaries the design keeps: data flows core -> feedback -> retrain, UI only in web/ and app.py."""

from __future__ import annotations

import ast
from pathlib import Path

from core.settings.config import PROJECT_ROOT

# The package contracts are import-linter's ([tool.importlinter] in pyproject.toml, `lint-imports` in .ci/run);
# it cannot take the app module as a root, so its own rule is here: the page starts retrains as child processes
# (`python -m retrain`), so torch never loads in the server.
APP_FORBIDDEN = {"torch", "retrain", "transformers", "bench", "testkit", "tests"}
PRODUCT = ["core", "feedback", "retrain", "web", "app.py"]


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def _product_files(name: str) -> list[Path]:
    path = PROJECT_ROOT / name
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


def test_app_imports_neither_retrain_nor_torch_nor_test_code() -> None:
    assert imported_roots(PROJECT_ROOT / "app.py") & APP_FORBIDDEN == set()


def test_bench_never_imports_tests_and_builds_its_command_lines_one_way() -> None:
    """What tests and benchmarks share lives in testkit; every benchmark's parser comes from bench.options."""
    importing_tests, own_parsers = [], []
    for path in sorted((PROJECT_ROOT / "bench").rglob("*.py")):
        name = str(path.relative_to(PROJECT_ROOT))
        if "tests" in imported_roots(path):
            importing_tests.append(name)
        if path.name != "options.py" and "ArgumentParser(" in path.read_text(encoding="utf-8"):
            own_parsers.append(name)
    assert importing_tests == [] and own_parsers == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """Project modules `path` imports, at any depth of the file (imports inside functions count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name for name in names if name in known}
    return found


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle a depth-first walk meets, each as the modules around it."""
    circles: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            circles.append([*trail[trail.index(module) :], module])
            return
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return circles


def test_import_circles_are_found() -> None:
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert import_circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle_between_product_modules() -> None:
    files = {_module_name(path): path for name in PRODUCT for path in _product_files(name)}
    graph = {module: _imported_modules(path, set(files)) - {module} for module, path in files.items()}
    assert import_circles(graph) == []
