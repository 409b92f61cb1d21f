"""The exercise's checks on your own machine: ``python -m exercise my_attention.py``.

Prints the checklist and the diagnoses the app's "Build this" page would show for the
``scaled_dot_product_attention`` defined in the file, and exits with status 0 when every check
passes, 1 when one fails, 2 when the file cannot be read. Your code runs in this process, as
you: it is your own code on your own computer, so no sandbox is needed (and none of the
server's limits apply; stop an endless loop with Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from exercise.cases import exercise_cases
from exercise.limits import MAX_SOURCE_CHARS
from exercise.readback import absorb_messages
from exercise.results import RunResult
from exercise.runner import run_source
from exercise.verdicts import ExerciseReport, evaluate


def check_file_in_process(source: str) -> ExerciseReport:
    """Run `source` here, through the same calling code as the sandbox, and judge it like the page does."""
    cases = exercise_cases()
    messages: list[dict] = []
    run_source(source, [c.as_json() for c in cases], lambda msg: messages.append(json.loads(json.dumps(msg))))
    run = RunResult(isolation="this Python process, on your own machine")
    absorb_messages(messages, run, timeout_s=0, timed_out=None)  # the server's decoding, from the same JSON
    return evaluate(run, cases)


def format_report(report: ExerciseReport, name: str) -> str:
    """The report as plain text, in the page's order: checklist, diagnosis, verdict."""
    wrap = textwrap.TextWrapper(width=100, initial_indent="        ", subsequent_indent="        ")
    lines = [f"Checking scaled_dot_product_attention in {name}", ""]
    for i, check in enumerate(report.checks, start=1):
        lines.append(f"  {'PASS' if check.passed else 'FAIL'}  {i}. {check.name}")
        lines.extend(wrap.wrap(check.message))
    if report.diagnoses:
        lines += ["", "Diagnosis:"]
        for text in report.diagnoses:
            lines.extend(textwrap.wrap(text, width=100, initial_indent="  - ", subsequent_indent="    "))
    n_passed = sum(c.passed for c in report.checks)
    verdict = ("All checks pass, the stretch included. This is attention." if report.passed
               else f"{n_passed} of {len(report.checks)} checks pass.")
    lines += ["", verdict]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m exercise",
        description="Check your scaled_dot_product_attention against the lesson, as the app's exercise page does.")
    parser.add_argument("file", type=Path, help="a .py file defining scaled_dot_product_attention(Q, K, V, mask=None)")
    args = parser.parse_args(argv)
    try:
        source = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"Cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    if len(source) > MAX_SOURCE_CHARS:
        print(f"{args.file} is {len(source):,} characters long; the checker accepts at most {MAX_SOURCE_CHARS:,}.",
              file=sys.stderr)
        return 2
    report = check_file_in_process(source)
    print(format_report(report, str(args.file)))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
