"""Dependencies split by who needs them: requirements.txt (what a Space and the image install: pinned, CPU torch,
no test tools), requirements-dev.txt (that plus the tools and the project), and pyproject's lists agree."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from core.settings.config import PROJECT_ROOT

DEV_TOOLS = {"pytest", "pytest-xdist", "ruff", "playwright", "optuna", "mypy", "import-linter", "vulture", "mkdocs",
             "mkdocs-material"}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def lines(name: str) -> list[str]:
    text = (PROJECT_ROOT / name).read_text(encoding="utf-8")
    return [re.sub(r"\s+#.*$", "", line).strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def requirements(name: str) -> dict[str, Requirement]:
    reqs = [Requirement(line) for line in lines(name) if not line.startswith("-")]
    return {canonicalize_name(req.name): req for req in reqs}


def pinned(req: Requirement) -> str:
    [spec] = list(req.specifier)
    assert spec.operator == "==", f"{req} is not pinned with =="
    return spec.version


def test_what_a_space_installs_is_pinned_cpu_only_and_self_contained() -> None:
    runtime = requirements("requirements.txt")
    assert not DEV_TOOLS & set(runtime), DEV_TOOLS & set(runtime)
    for req in runtime.values():
        pinned(req)
    assert pinned(runtime["torch"]).endswith("+cpu")  # only PyTorch's CPU index has it: never the CUDA build
    options = [line for line in lines("requirements.txt") if line.startswith("-")]
    # A Space installs this file before the rest of the repository is there: no -r, -e or local paths.
    assert options == [f"--extra-index-url {CPU_INDEX}"]
    assert {"matplotlib", "tqdm", "krippendorff", "onnxruntime", "gradio", "mlflow"} <= set(runtime)


def test_development_adds_the_tools_and_the_project() -> None:
    dev_lines = lines("requirements-dev.txt")
    assert dev_lines[0] == "-r requirements.txt" and "-e ." in dev_lines
    dev = requirements("requirements-dev.txt")
    assert set(dev) == DEV_TOOLS
    for req in dev.values():
        pinned(req)


def test_pyproject_lists_the_same_packages_and_admits_the_pins() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    runtime = requirements("requirements.txt")
    assert set(declared) == set(runtime)
    for name, req in runtime.items():
        assert declared[name].specifier.contains(pinned(req)), f"pyproject's {declared[name]} refuses {req}"
        assert declared[name].extras == req.extras, name
    dev = {canonicalize_name(r.name): r for r in map(Requirement, project["optional-dependencies"]["dev"])}
    assert set(dev) == set(requirements("requirements-dev.txt"))


def test_the_space_front_matter_matches_what_is_installed() -> None:
    import yaml

    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n", 2)[1])
    assert front["sdk"] == "gradio" and front["sdk_version"] == pinned(requirements("requirements.txt")["gradio"])
    assert str(front["python_version"]) == "3.11" and front["hf_oauth"] is True  # Hugging Face sign-in on
    assert (PROJECT_ROOT / front["app_file"]).is_file() and front["app_file"] == "app.py"
