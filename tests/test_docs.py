"""The README and docs/: every relative link resolves, and every file path the documents quote exists today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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
               "tests/pages/test_softmax_rows.py", "tests/ui/charts/test_softmax_rows.py"}


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
#: The README is the lecturer's guide: short enough to follow; developer material lives in docs/.
README_MAX_LINES = 150


def code_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)]


def test_the_readme_starts_with_the_two_commands():
    text = README.read_text()
    lines = text.splitlines()
    assert lines[0] == "# Attention, interactively"
    assert code_blocks(text)[:2] == [RUN, TEST]
    before = text[:text.index(TEST)]
    assert "\n## " not in before and len(before.splitlines()) <= 12  # the title and a line before each: nothing else


def test_the_readme_stays_short():
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


def test_the_readme_lists_every_page_of_the_router():
    titles = re.findall(r'st\.Page\("app_pages/\w+\.py", title="([^"]+)"', (ROOT / "streamlit_app.py").read_text())
    table = [line for line in README.read_text().splitlines() if line.startswith("| **")]
    assert len(titles) == 14
    assert [t for t in titles if not any(f"**{t}**" in row for row in table)] == []
