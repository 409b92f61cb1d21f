"""`python -m devtools.new_page NAME "Title"`: a new page's files from the recipe's template, registered, passing.

The end-to-end test runs the scaffold in a copy of the repository and the new page's tests there, with the
registry's tests that `-k NAME` would miss; the others check, on a copy of the router and the README alone, where
the page is registered and what the scaffold refuses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.appserver import ROOT, router_pages
from devtools.new_page import FILES, NewPage, ScaffoldError, quick_check, write

#: Not the recipe's example (softmax_rows), so that these tests still pass in a copy where it was scaffolded.
NAME, TITLE = "scaffolded_example", "A scaffolded example"


def repository_copy(destination: Path) -> Path:
    shutil.copytree(ROOT, destination, ignore=shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache", "*.pyc"))
    return destination


def run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the copy's modules, not this checkout's
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_scaffolds_page_passes_its_tests_and_the_registrys_as_written(tmp_path):
    repo = repository_copy(tmp_path / "repo")
    made = run(["-m", "devtools.new_page", NAME, TITLE, "--icon", ":material/table_rows:"], repo, timeout=60)
    assert made.returncode == 0, made.stderr
    assert quick_check(NAME) in made.stdout
    tests = [f"tests/core/test_{NAME}.py", f"tests/ui/charts/test_{NAME}.py", f"tests/pages/test_{NAME}.py",
             "tests/test_registry.py", "tests/test_pages_structure.py::test_every_page_is_in_the_router",
             "tests/test_docs.py::test_the_readme_lists_every_page_of_the_router",
             "tests/test_benchmarks.py::test_every_page_has_a_heaviest_extreme",
             "tests/ui/test_url_state.py", "tests/ui/test_quiz.py"]
    # the page's own tests, its registration's, and the shared tests that read it, on this page alone
    checked = run(["-m", "pytest", "-n0", "-v", "-p", "no:cacheprovider", "-m", "not browser", *tests,
                   "-k", f"{NAME} or router_wide"], repo, timeout=300)
    assert checked.returncode == 0, checked.stdout[-3000:]
    passed = {line.split(" ")[0] for line in checked.stdout.splitlines() if " PASSED" in line}
    links, case = "tests/ui/test_url_state.py::", f"[{NAME}-seed+seq_len+present]"
    for test in (f"tests/pages/test_{NAME}.py::test_the_page_shows_cores_scores_and_weights",
                 f"tests/test_registry.py::test_every_page_declares_what_the_shared_tests_need[{NAME}]",
                 f"{links}test_a_valid_value_in_the_link_is_shown_and_used{case}",
                 f"{links}test_a_malformed_value_in_the_link_falls_back_with_a_notice{case}",
                 f"{links}test_every_url_key_of_every_page_has_both_round_trips",
                 f"tests/ui/test_quiz.py::test_the_answer_is_hidden_until_the_student_commits[{NAME}-{NAME}_largest]"):
        assert test in passed, (test, sorted(passed))


@pytest.fixture
def router_and_readme(tmp_path) -> Path:
    for path in ("streamlit_app.py", "README.md"):
        shutil.copy(ROOT / path, tmp_path / path)
    for template_path in FILES.values():
        (tmp_path / template_path.format(name=NAME)).parent.mkdir(parents=True, exist_ok=True)
    return tmp_path


def test_the_page_is_routed_at_the_end_of_its_section_and_its_readme_row_follows_the_routers_order(
        router_and_readme):
    root = router_and_readme
    written = write(NewPage(NAME, TITLE, section="lesson"), root)
    assert written[-2:] == ["streamlit_app.py", "README.md"]
    assert all((root / path).is_file() for path in written)
    routed = [p.name for p in router_pages(root / "streamlit_app.py")]
    lesson_end = [p.name for p in router_pages()].index("exercise")  # "Build this" starts after the lesson
    assert routed[lesson_end] == NAME and routed[:lesson_end] == [p.name for p in router_pages()][:lesson_end]
    rows = [line for line in (root / "README.md").read_text().splitlines() if line.startswith("| **")]
    titles = [p.title for p in router_pages(root / "streamlit_app.py")]
    assert [row.split("**")[1] for row in rows] == titles


@pytest.mark.parametrize(("page", "refusal"), [
    (NewPage("Softmax-Rows", TITLE), "lower-case words joined by '_'"),
    (NewPage("class", TITLE), "lower-case words joined by '_'"),
    (NewPage(NAME, 'The "softmax"'), "without quotes"),
    (NewPage("multi_head", TITLE), "already has a page named 'multi_head'"),
    (NewPage(NAME, "Multi-head attention"), "titled 'Multi-head attention'"),
    (NewPage(NAME, TITLE, section="appendix"), "one of lesson, build, beyond"),
])
def test_a_taken_or_malformed_name_writes_nothing(router_and_readme, page, refusal):
    before = {p: p.read_text() for p in router_and_readme.rglob("*") if p.is_file()}
    with pytest.raises(ScaffoldError, match=refusal):
        write(page, router_and_readme)
    assert {p: p.read_text() for p in router_and_readme.rglob("*") if p.is_file()} == before


def test_a_file_already_there_writes_nothing(router_and_readme):
    (router_and_readme / "core" / f"{NAME}.py").write_text("# someone's work\n")
    with pytest.raises(ScaffoldError, match=f"already there, so nothing was written: core/{NAME}.py"):
        write(NewPage(NAME, TITLE), router_and_readme)
    assert (router_and_readme / "core" / f"{NAME}.py").read_text() == "# someone's work\n"
    assert NAME not in (router_and_readme / "streamlit_app.py").read_text()


def test_a_long_title_keeps_the_routers_lines_within_120_characters():
    entry = NewPage(NAME, "A title long enough to push the router's line past its limit").router_entry()
    assert all(len(line) <= 120 for line in entry.splitlines()) and len(entry.splitlines()) == 2
