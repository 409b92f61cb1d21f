"""``python -m exercise FILE``: the page's checks on a student's own machine, as plain text."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import core.exercise_solution as solution
from exercise.__main__ import check_file_in_process, format_report
from exercise.sandbox import Sandbox, check_submission

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = inspect.getsource(solution)
NO_SCALING = SOLUTION.replace(" / d_k**0.5", "")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exercise", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_a_correct_file_passes_with_exit_status_0(tmp_path):
    path = tmp_path / "my_attention.py"
    path.write_text(SOLUTION)
    done = run_cli(str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("PASS") == 6 and "All checks pass" in done.stdout


def test_a_mistake_fails_with_exit_status_1_and_its_diagnosis_in_plain_text(tmp_path):
    path = tmp_path / "my_attention.py"
    path.write_text(NO_SCALING)
    done = run_cli(str(path))
    assert done.returncode == 1
    assert "FAIL  4. torch.allclose" in done.stdout
    assert "No scaling: the scores are never divided by √d_k. Divide `Q @ Kᵀ` by `d_k ** 0.5`." in done.stdout
    assert "**" not in done.stdout.replace("d_k ** 0.5", "") and "\\_" not in done.stdout


@pytest.mark.parametrize("content", [None, b"\xff\xfe not utf-8"])
def test_an_unreadable_file_exits_with_status_2(tmp_path, content):
    path = tmp_path / "my_attention.py"
    if content is not None:
        path.write_bytes(content)
    done = run_cli(str(path))
    assert done.returncode == 2 and "Cannot read" in done.stderr


def test_the_command_line_says_what_the_page_says():
    """The same checklist and diagnoses as the sandboxed check, as plain text."""
    box = Sandbox()
    try:
        for source in (SOLUTION, NO_SCALING, "def scaled_dot_product_attention(Q, K, V):\n    return Q\n"):
            offline, served = check_file_in_process(source), check_submission(source, box)
            assert [(c.name, c.passed, c.message) for c in offline.checks] == \
                [(c.name, c.passed, c.message) for c in served.checks]
            assert offline.diagnoses == served.diagnoses
            assert format_report(offline, "f.py").count("PASS") == sum(c.passed for c in served.checks)
    finally:
        box.close()


def test_the_report_is_plain_text_with_no_markdown_to_undo():
    report = check_file_in_process(NO_SCALING)
    said = " ".join([c.message for c in report.checks] + report.diagnoses)
    assert "**" not in said.replace("d_k ** 0.5", "") and "\\_" not in said and "\\[" not in said
