"""The README and docs/: every relative link resolves, and every file path the documents quote exists today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devtools.appserver import router_pages

#: The README's table of pages and the docs' paths cover every page of the router at once (the recipe's quick check).
pytestmark = pytest.mark.router_wide
ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: A file path in backticks: folders and a name with one of the repository's extensions (a generated result, a
#: placeholder such as ``<page>.py`` or a glob is not a path of the repository).
QUOTED_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*/?)`")
EXTENSIONS = (".py", ".md", ".toml", ".txt", ".template", ".png", ".cfg")
#: Quoted on purpose though not in the repository: the local secrets file a lecturer may create (in .gitignore), the
#: folder the pages must not live in, and the new page that docs/adding-a-page.md walks through.
NOT_SHIPPED = {".streamlit/secrets.toml", "pages/", "app_pages/softmax_rows.py", "ui/charts/softmax_rows.py",
               "tests/pages/test_softmax_rows.py", "tests/ui/charts/test_softmax_rows.py", "core/softmax_rows.py",
               "tests/core/test_softmax_rows.py"}


def relative_links(document: Path) -> list[str]:
    return [t for t in LINK.findall(document.read_text()) if not re.match(r"[a-z]+:|#", t)]


def quoted_paths(document: Path) -> list[str]:
    found = []
    for token in QUOTED_PATH.findall(document.read_text()):
        if ("/" in token and (token.endswith("/") or token.endswith(EXTENSIONS))) or token in (
                "README.md", "streamlit_app.py", "requirements.txt", "requirements-dev.txt", "packages.txt"):
            found.append(token)
    return [t for t in found if t not in NOT_SHIPPED]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_relative_link_resolves(document):
    missing = [t for t in relative_links(document) if not (document.parent / t.split("#")[0]).exists()]
    assert missing == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_quoted_path_exists(document):
    missing = [t for t in quoted_paths(document) if not (ROOT / t).exists()]
    assert missing == []


def test_the_checks_see_links_and_paths():
    performance = ROOT / "docs" / "performance.md"
    assert "ui/charts/template.py" in quoted_paths(performance) and "exercise/limits.py" in quoted_paths(performance)
    assert "architecture.md" in relative_links(ROOT / "docs" / "development.md")


README = ROOT / "README.md"
RUN = "pip install -r requirements.txt && streamlit run streamlit_app.py"
TEST = "pip install -r requirements-dev.txt && python -m pytest"
#: The README is the lecturer's guide: short enough to follow; developer material lives in docs/. Counted without
#: the table of pages, which grows by a row with every page.
README_MAX_LINES = 139


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)]


def page_rows(text: str) -> list[str]:
    """The rows of the README's table of pages (`## The pages`), its header and rule included."""
    section = text.split("\n## The pages\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def test_the_readme_starts_with_the_two_commands():
    text = README.read_text()
    lines = text.splitlines()
    assert lines[0] == "# Attention, interactively"
    assert code_blocks(text)[:2] == [RUN, TEST]
    before = text[:text.index(TEST)]
    assert "\n## " not in before and len(before.splitlines()) <= 12  # the title and a line before each: nothing else


def test_the_readme_stays_short():
    text = README.read_text()
    beside_the_table = len(text.splitlines()) - len(page_rows(text))
    assert beside_the_table <= README_MAX_LINES, (
        f"README.md has {beside_the_table} lines besides its table of pages, more than {README_MAX_LINES}")


def test_the_readme_lists_every_page_of_the_router():
    router = (ROOT / "streamlit_app.py").read_text()
    titles = [page.title for page in router_pages()]
    assert len(titles) == router.count("st.Page(") > 0  # router_pages() read every page of the router
    rows = page_rows(README.read_text())[2:]
    missing = [t for t in titles if not any(row.startswith(f"| **{t}**") for row in rows)]
    assert not missing, (f"README.md: no row for {missing} in the table under '## The pages'; add "
                         "`| **<the router's title>** | what students see |` in the router's order")
    named = [re.match(r"\| \*\*(.+?)\*\*", row) for row in rows]
    assert [m.group(1) if m else row for m, row in zip(named, rows, strict=True)] == titles, (
        "README.md: the table of pages lists the router's pages, each once, in the router's order")


DEVELOPMENT = ROOT / "docs" / "development.md"


def key_table(text: str) -> dict[str, str]:
    """The table of query keys in docs/development.md (`## Query parameters`): ``{key: its row}``."""
    section = text.split("\n## Query parameters\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {key: row for row in rows for key in re.findall(r"`(\w+)`", row.split(" | ")[0])}


def test_the_key_table_of_the_development_guide_is_query_keys():
    from ui.url_state import QUERY_KEYS

    table = key_table(DEVELOPMENT.read_text())
    assert not QUERY_KEYS.keys() - table.keys(), (
        f"docs/development.md, Query parameters: no row for {sorted(QUERY_KEYS.keys() - table.keys())}; "
        "every key of QUERY_KEYS (ui/url_state.py) is public and has a row (its key in the first column)")
    assert not table.keys() - QUERY_KEYS.keys(), (
        f"docs/development.md, Query parameters: {sorted(table.keys() - QUERY_KEYS.keys())} are not in QUERY_KEYS")
