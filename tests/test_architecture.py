"""The layering of docs/architecture.md, checked on the import statements of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.stem for p in (ROOT / "app_pages").glob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at any depth of its code (``from a.b import c`` gives ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def top_levels(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_modules(path)}


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", modules_of("core"), ids=lambda p: p.name)
def test_core_is_maths_only(path):
    assert not top_levels(path) & {"streamlit", "altair", "pandas", "ui", "app_pages", "exercise", "training",
                                   "decoder", "pretrained", "cost"}


@pytest.mark.parametrize("path", modules_of("poll"), ids=lambda p: p.name)
def test_the_poll_is_storage_and_rules_only(path):
    assert not top_levels(path) & {"streamlit", "altair", "pandas", "ui", "app_pages", "core", "exercise",
                                   "training", "pretrained", "cost", "devtools", "benchmarks"}


@pytest.mark.parametrize("path", modules_of("notebooks"), ids=lambda p: p.name)
def test_notebooks_are_written_without_streamlit_or_the_apps_maths(path):
    """A notebook's code is text for the student's kernel, which recomputes what `core` computes (the tests compare
    the two): the package that writes it runs none of the app's maths. It may share a page's text (the exercise's
    skeleton)."""
    assert not top_levels(path) & {"streamlit", "altair", "torch", "pandas", "ui", "app_pages", "core", "training",
                                   "decoder", "pretrained", "cost", "poll"}
    assert {m for m in imported_modules(path) if m.split(".")[0] == "exercise"} <= {"exercise.cases",
                                                                                   "exercise.cases.SKELETON"}


@pytest.mark.parametrize("path", modules_of("ui/charts"), ids=lambda p: p.name)
def test_chart_modules_do_not_use_streamlit(path):
    assert "streamlit" not in top_levels(path)


@pytest.mark.parametrize("path", modules_of("ui/wording"), ids=lambda p: p.name)
def test_sentence_modules_do_not_use_streamlit(path):
    assert not top_levels(path) & {"streamlit", "altair"}


@pytest.mark.parametrize("page", PAGES)
def test_a_page_draws_through_its_own_chart_module_without_altair_or_pytorch(page):
    imports = imported_modules(ROOT / "app_pages" / f"{page}.py")
    assert (ROOT / "ui" / "charts" / f"{page}.py").is_file()
    assert f"ui.charts.{page}" in imports
    assert not {name.split(".")[0] for name in imports} & {"altair", "torch"}
    assert not any(name.startswith("ui.charts.") and name.split(".")[2] in PAGES and name.split(".")[2] != page
                   for name in imports), "a page uses another page's chart module"


#: Packages whose modules may not import each other in a circle, of two or more (a package's `__init__` and its own
#: modules aside).
PACKAGES = ["app_pages", "benchmarks", "core", "cost", "devtools", "exercise", "notebooks", "poll", "pretrained",
            "training", "ui"]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def circles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The modules of every circle of imports (a strongly connected component of two or more), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(a: str) -> None:  # Tarjan's algorithm
        order[a] = low[a] = len(order)
        stack.append(a)
        for b in imports[a]:
            if b not in order:
                visit(b)
                low[a] = min(low[a], low[b])
            elif b in stack:
                low[a] = min(low[a], order[b])
        if low[a] == order[a]:
            component = stack[stack.index(a):]
            del stack[stack.index(a):]
            if len(component) > 1:
                found.append(sorted(component))

    for a in sorted(imports):
        if a not in order:
            visit(a)
    return found


def test_circles_finds_every_circle_and_only_circles():
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e", "a"}, "e": {"d"}, "f": {"a"}, "g": set()}
    assert sorted(circles(imports)) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.router_wide  # every page in one test: docs/adding-a-page.md's quick check selects it
def test_no_modules_import_each_other_in_a_circle():
    modules = {module_name(p): p for package in PACKAGES for p in modules_of(package)}
    imports = {name: {b for b in imported_modules(path) & modules.keys()
                      if not (name.startswith(f"{b}.") or b.startswith(f"{name}.") or name == b)}
               for name, path in modules.items()}
    assert not circles(imports)
