"""The exercise's class round in sentences (`ui.wording.exercise_round`), computed from a round's summary."""

from datetime import UTC, datetime

from poll import CheckResult, StudentResult, summarise
from ui.wording.exercise_round import attempts_to_pass, passing, shown_share

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def rows(*to_pass: int | None, failing: int = 0) -> tuple[StudentResult, ...]:
    found = [StudentResult(f"{i:064x}", CheckResult("passed"), n, n, NOW, NOW) for i, n in enumerate(to_pass)]
    found += [StudentResult(f"{100 + i:064x}", CheckResult("failed", 4, "scale_none"), 2, None, NOW, NOW)
              for i in range(failing)]
    return tuple(found)


def test_the_share_who_pass_is_counted_from_the_rows():
    summary = summarise(rows(1, 3, 2, failing=5))
    assert passing(summary) == "3 of 8 students who checked pass now (38 %)."
    assert shown_share(summary) == "38 % of the class's checked code passes every check now (3 of 8)."


def test_the_checks_to_a_first_pass_give_the_median_the_middle_half_and_the_extremes():
    assert attempts_to_pass(summarise(rows(1, 2, 2, 3, 5, 9))) == (
        "A first pass took a median of 2.5 checks; the middle half took 2 to 5 (fewest 1, most 9, over 6 students).")
    assert attempts_to_pass(summarise(rows(1))) == (
        "A first pass took a median of 1 check (fewest 1, most 1, over 1 student).")


def test_an_empty_round_says_so():
    empty = summarise(())
    assert passing(empty) == "Nobody has checked their code in this round yet."
    assert attempts_to_pass(empty) == "Nobody has passed yet."
    assert shown_share(empty) == "Nobody in the class has checked their code in this round yet."
