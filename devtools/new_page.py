"""Write a new page from the recipe's template and register it: ``python -m devtools.new_page NAME "Title"``.

It writes the page's six files (docs/adding-a-page.md, "Your room"): its maths ``core/NAME.py``, its charts
``ui/charts/NAME.py``, the page ``app_pages/NAME.py``, and a test file for each, the page's ending with what the
shared tests need to know of it (``SHARED = PageTests(...)``). Then it registers the page: its ``st.Page`` in the
router (``streamlit_app.py``) and its row in the README's table of pages. The suite passes on the result as
written: the page shows the scaled scores of random queries and keys and their softmax, asks a question the class
can answer together, and is then yours to rewrite.

Nothing is written unless everything can be: a name or title already taken, or a file already there, stops it
with a message.
"""

from __future__ import annotations

import argparse
import keyword
import re
import string
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from devtools.appserver import ROOT, router_pages

TEMPLATES = Path(__file__).resolve().parent / "page_template"
#: Template -> the file it becomes, under the repository's root.
FILES = {
    "core.py.tmpl": "core/{name}.py",
    "core_test.py.tmpl": "tests/core/test_{name}.py",
    "charts.py.tmpl": "ui/charts/{name}.py",
    "charts_test.py.tmpl": "tests/ui/charts/test_{name}.py",
    "page.py.tmpl": "app_pages/{name}.py",
    "page_test.py.tmpl": "tests/pages/test_{name}.py",
}
SECTIONS = ("lesson", "build", "beyond")  # the router's lists, in `page_sections()` of streamlit_app.py
ABOUT = ("The scaled scores of T random queries and keys beside their softmax, row by row; the class predicts "
         "which key a row weighs most.")
#: The tests a new page must pass that select every page at once, so ``-k NAME`` alone would miss them.
ROUTER_WIDE = "router_wide"


def quick_check(name: str) -> str:
    """The command that runs exactly the tests a page must pass without a browser."""
    return f'python -m pytest -n0 -q -m "not browser" -k "{name} or {ROUTER_WIDE}"'


class ScaffoldError(ValueError):
    """Why nothing was written."""


@dataclass(frozen=True)
class NewPage:
    name: str  # the file's stem, the URL path and the prefix of every file
    title: str  # the router's title, the page's heading, the README's row
    section: str = "beyond"
    icon: str = ":material/lightbulb:"
    about: str = ABOUT

    @property
    def camel(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    def router_entry(self) -> str:
        entry = f'        st.Page("app_pages/{self.name}.py", title="{self.title}", icon="{self.icon}"),'
        if len(entry) > 120:
            entry = (f'        st.Page("app_pages/{self.name}.py", title="{self.title}",\n'
                     f'                icon="{self.icon}"),')
        return entry

    def readme_row(self) -> str:
        return f"| **{self.title}** | {self.about} |"


def check(page: NewPage, root: Path) -> None:
    """Raise `ScaffoldError` unless `page` can be written under `root` without touching anything of another page."""
    if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", page.name) or keyword.iskeyword(page.name):
        raise ScaffoldError(f"NAME {page.name!r}: lower-case words joined by '_' (it names files and the URL path)")
    if not page.title.strip() or any(c in page.title for c in '"\\|\n'):
        raise ScaffoldError(f"Title {page.title!r}: some words, without quotes, backslashes or '|'")
    if page.section not in SECTIONS:
        raise ScaffoldError(f"--section {page.section!r}: one of {', '.join(SECTIONS)}")
    routed = router_pages(root / "streamlit_app.py")
    if page.name in {p.name for p in routed} or page.title in {p.title for p in routed}:
        raise ScaffoldError(f"the router already has a page named {page.name!r} or titled {page.title!r}")
    taken = [path for path in targets(page) if (root / path).exists()]
    if taken:
        raise ScaffoldError(f"already there, so nothing was written: {', '.join(taken)}")


def targets(page: NewPage) -> list[str]:
    return [path.format(name=page.name) for path in FILES.values()]


def with_router_entry(router: str, page: NewPage) -> str:
    """The router's source with `page` at the end of its `section` list."""
    found = re.search(rf"\n    {page.section} = \[\n(.*?)\n    \]\n", router, flags=re.S)
    if not found:
        raise ScaffoldError(f"streamlit_app.py: no `{page.section} = [...]` list of pages in page_sections()")
    return router[:found.end(1)] + "\n" + page.router_entry() + router[found.end(1):]


def with_readme_row(readme: str, page: NewPage, titles: list[str]) -> str:
    """The README with `page`'s row in its table of pages, where the router (`titles`, in order) has it."""
    lines = readme.splitlines(keepends=True)
    row_of = {t: i for i, line in enumerate(lines) for t in titles if line.startswith(f"| **{t}**")}
    position = titles.index(page.title)
    if position == 0:  # the first page: right under the table's header and rule
        at = next(i for i, line in enumerate(lines) if line.startswith("| **"))
    elif titles[position - 1] in row_of:
        at = row_of[titles[position - 1]] + 1
    else:
        raise ScaffoldError(f"README.md: no row for {titles[position - 1]!r} to put the new row after")
    return "".join([*lines[:at], page.readme_row() + "\n", *lines[at:]])


def write(page: NewPage, root: Path = ROOT) -> list[str]:
    """Write the page's files and register it under `root`; returns what was written or changed."""
    check(page, root)
    names = {"name": page.name, "camel": page.camel, "title": page.title}
    sources = {path: string.Template((TEMPLATES / template).read_text()).substitute(names)
               for template, path in ((t, p.format(name=page.name)) for t, p in FILES.items())}
    router_path, readme_path = root / "streamlit_app.py", root / "README.md"
    router = with_router_entry(router_path.read_text(), page)
    with tempfile.TemporaryDirectory() as scratch:  # the router's titles in order, the new page's included
        (Path(scratch) / "streamlit_app.py").write_text(router)
        titles = [p.title for p in router_pages(Path(scratch) / "streamlit_app.py")]
    readme = with_readme_row(readme_path.read_text(), page, titles)
    for path, source in sources.items():
        (root / path).write_text(source)
    router_path.write_text(router)
    readme_path.write_text(readme)
    return [*sources, "streamlit_app.py", "README.md"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="the page's file name without .py, e.g. softmax_rows")
    ap.add_argument("title", help='the title in the sidebar and on the page, e.g. "Softmax, row by row"')
    ap.add_argument("--section", default="beyond", choices=SECTIONS, help="the router's group (default: beyond)")
    ap.add_argument("--icon", default=":material/lightbulb:", help="a Material icon, e.g. :material/table_rows:")
    ap.add_argument("--about", default=ABOUT, help="the README's 'What students see' for the page")
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # a copy of the repository
    args = ap.parse_args(argv)
    page = NewPage(args.name, args.title, args.section, args.icon, args.about)
    try:
        written = write(page, args.root)
    except ScaffoldError as refused:
        print(f"new_page: {refused}", file=sys.stderr)
        return 2
    print("Written:", *(f"  {path}" for path in written), sep="\n")
    print(f"\nThe tests a new page must pass without a browser:\n  {quick_check(page.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
