"""The dependency files: exact pins, PyTorch's CPU index, and nothing at run time that the app does not use."""

from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
APP_CODE = ["streamlit_app.py", *(str(p.relative_to(ROOT)) for package in
            ("app_pages", "core", "ui", "exercise", "training", "decoder", "pretrained", "cost", "poll",
             "notebooks")
            for p in (ROOT / package).rglob("*.py"))]


def lines(name: str) -> list[str]:
    text = (ROOT / name).read_text()
    return [line.split(" #")[0].strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def requirements(name: str) -> list[Requirement]:
    return [Requirement(line) for line in lines(name) if not line.startswith("-")]


def test_pytorch_comes_from_its_cpu_index_at_the_version_every_platform_has():
    assert f"--extra-index-url {CPU_INDEX}" in lines("requirements.txt")
    torch = next(r for r in requirements("requirements.txt") if r.name == "torch")
    # No local label (+cpu): the same pin resolves on macOS and Windows, where only plain versions exist.
    assert str(torch.specifier) == "==2.13.0"


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt"])
def test_every_requirement_is_pinned_exactly(name):
    for line in lines(name):
        if line.startswith("-"):
            assert line.startswith(("-r ", "--extra-index-url ")), line
            continue
        spec = Requirement(line).specifier
        assert len(spec) == 1 and next(iter(spec)).operator == "==", line


def imported_top_levels() -> set[str]:
    found: set[str] = set()
    for path in APP_CODE:
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"\w+", node.value):
                found.add(node.value)  # a module found by name (the model package, through importlib)
    return found


#: Runtime requirements the app does not import: the server takes them by itself (checked in the running server,
#: tests/ui/test_warmup.py).
TAKEN_BY_THE_SERVER = {"uvloop", "httptools"}


def test_every_runtime_requirement_is_used_by_the_app():
    modules_of: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(module)
    used = imported_top_levels()
    for requirement in requirements("requirements.txt"):
        if requirement.name in TAKEN_BY_THE_SERVER:
            continue
        modules = modules_of[re.sub(r"[-_.]+", "-", requirement.name).lower()]
        assert modules & used, f"{requirement.name} ({', '.join(sorted(modules))}) is not used by the app"
