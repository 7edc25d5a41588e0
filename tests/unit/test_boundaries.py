"""The package boundaries the design keeps: data flows core -> feedback -> retrain, UI only in web/ and app.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT

FORBIDDEN = {
    "core": {"torch", "gradio", "feedback", "retrain", "transformers"},
    "feedback": {"torch", "gradio", "retrain", "transformers", "onnxruntime"},
    "retrain": {"gradio"},
    # The page starts retrains as child processes (`python -m retrain`), so torch never loads in the server.
    "web": {"torch", "retrain", "transformers"},
}
PRODUCT = ["core", "feedback", "retrain", "web", "app.py"]


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_across_its_boundary(package: str) -> None:
    offenders = {
        str(path.relative_to(PROJECT_ROOT)): sorted(imported_roots(path) & FORBIDDEN[package])
        for path in (PROJECT_ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def _product_files(name: str) -> list[Path]:
    path = PROJECT_ROOT / name
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


def test_app_imports_neither_retrain_nor_torch() -> None:
    assert imported_roots(PROJECT_ROOT / "app.py") & FORBIDDEN["web"] == set()


@pytest.mark.parametrize("name", PRODUCT)
def test_product_never_imports_bench(name: str) -> None:
    offenders = [str(path.relative_to(PROJECT_ROOT)) for path in _product_files(name) if "bench" in imported_roots(path)]
    assert offenders == []
