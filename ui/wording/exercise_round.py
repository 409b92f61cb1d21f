"""The exercise's class round in sentences: how many pass, the checks a first pass took, and the share the class
is shown, computed from a round's `poll.RoundSummary` (the lecturer's panel and every student's page)."""

from __future__ import annotations

import numpy as np

from poll import RoundSummary


def _students(n: int) -> str:
    return f"{n} student{'' if n == 1 else 's'}"


def passing(summary: RoundSummary) -> str:
    """``63 of 100 students who checked pass now (63 %).``, or that nobody has checked yet."""
    if summary.checked == 0:
        return "Nobody has checked their code in this round yet."
    return (f"{summary.passed} of {_students(summary.checked)} who checked pass now "
            f"({round(100 * summary.passed / summary.checked)} %).")


def attempts_to_pass(summary: RoundSummary) -> str:
    """The checks a first pass took: the median, the middle half and the extremes (their spread)."""
    taken = np.asarray(summary.attempts_to_pass)
    if taken.size == 0:
        return "Nobody has passed yet."
    low, high = int(np.percentile(taken, 25, method="lower")), int(np.percentile(taken, 75, method="higher"))
    median = float(np.median(taken))
    said = f"{median:g}"
    spread = f"; the middle half took {low} to {high}" if taken.size >= 4 else ""
    return (f"A first pass took a median of {said} check{'' if median == 1 else 's'}{spread} (fewest {taken.min()}, "
            f"most {taken.max()}, over {_students(int(taken.size))}).")


def shown_share(summary: RoundSummary) -> str:
    """What every student reads when the lecturer shows the class: the share who pass, without a name or a number
    that could point to one student beyond the counts."""
    if summary.checked == 0:
        return "Nobody in the class has checked their code in this round yet."
    share = round(100 * summary.passed / summary.checked)
    return (f"{share} % of the class's checked code passes every check now ({summary.passed} of "
            f"{summary.checked}).")
