"""Large binaries and a Space: every tracked file over 10 MB has an LFS rule, this repository keeps them as plain
objects (its transport and CI clone with plain git), and the Space push tool's copy holds them as LFS objects."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from core.settings.config import PROJECT_ROOT

SPACE_LIMIT = 10 * 1024 * 1024  # a Space refuses a plain git object over this
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
MODEL_FILES = ("models/starter/model.int8.onnx", "models/starter/checkpoint/model.safetensors")


def git(*args: str, cwd: Path = PROJECT_ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def git_bytes(*args: str, cwd: Path = PROJECT_ROOT) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def large_tracked_files() -> list[str]:
    files = [name for name in git("ls-files", "-z").split("\0") if name]
    return [name for name in files if (PROJECT_ROOT / name).is_file() and (PROJECT_ROOT / name).stat().st_size > SPACE_LIMIT]


def lfs_filter(paths: list[str]) -> dict[str, str]:
    out = git("check-attr", "-z", "filter", "--", *paths)
    fields = out.split("\0")
    return {fields[i]: fields[i + 2] for i in range(0, len(fields) - 2, 3)}


def test_every_tracked_file_over_10_mb_has_an_lfs_rule() -> None:
    large = large_tracked_files()
    assert set(MODEL_FILES) <= set(large)  # the check sees the files it is about
    missing = [path for path, value in lfs_filter(large).items() if value != "lfs"]
    assert not missing, f"no LFS rule in .gitattributes for {missing}: a Space would refuse the push"


def test_the_rules_are_hugging_faces_and_this_repository_keeps_plain_objects() -> None:
    rules = [line.split() for line in (PROJECT_ROOT / ".gitattributes").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert rules and all(rule[1:] == ["filter=lfs", "diff=lfs", "merge=lfs", "-text"] for rule in rules)
    assert {"*.onnx", "*.safetensors", "*.npy", "*.pt", "*.bin", "*.parquet"} <= {rule[0] for rule in rules}
    # A commit made where LFS filters are installed would store pointers here, and every plain clone (CI's
    # included) would get pointers instead of models.
    for path in large_tracked_files():
        assert not git_bytes("cat-file", "blob", f":{path}").startswith(LFS_POINTER), f"{path} is an LFS pointer"


@pytest.mark.skipif(shutil.which("git-lfs") is None, reason="git-lfs not installed (.ci/run installs Debian's)")
# git and git-lfs over a copy of the repository (about 15 s): with the whole flows (-m e2e), not the default run.
@pytest.mark.e2e
def test_the_space_push_tool_prepares_the_models_as_lfs_objects(tmp_path: Path) -> None:
    dest = tmp_path / "space"
    run = subprocess.run([str(PROJECT_ROOT / "scripts" / "space_push.sh"), "prepare", str(dest)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert set(MODEL_FILES) <= set(git("lfs", "ls-files", "--name-only", cwd=dest).split())
    blobs = git("rev-list", "--objects", "main", cwd=dest)
    sizes = subprocess.run(["git", "cat-file", "--batch-check=%(objecttype) %(objectsize) %(rest)"], cwd=dest,
                           input=blobs, check=True, capture_output=True, text=True).stdout.splitlines()
    plain = [line for line in sizes if line.startswith("blob ") and int(line.split()[1]) > SPACE_LIMIT]
    assert not plain, f"still plain git objects over 10 MB: {plain}"
    for path in MODEL_FILES:  # the same bytes as this repository's HEAD, behind an LFS pointer
        committed = hashlib.sha256(git_bytes("cat-file", "blob", f"HEAD:{path}")).hexdigest()
        pointer = git_bytes("cat-file", "blob", f"main:{path}", cwd=dest)
        assert pointer.startswith(LFS_POINTER) and f"oid sha256:{committed}".encode() in pointer
        assert hashlib.sha256((dest / path).read_bytes()).hexdigest() == committed
    assert not git("remote", cwd=dest).strip()  # nothing to push to by accident: the push names its remote
