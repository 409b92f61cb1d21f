"""What a check came to, in the few words a class is counted by: the outcome's kind, the first failed check and the
mistake's kind match the checklist and the diagnosis, and every kind has its one line."""

from __future__ import annotations

import pytest

from exercise.mistake_kinds import MISTAKE_LINES, CheckOutcome, outcome_line
from exercise.mistakes import MISTAKE_OPTIONS, Mistake
from exercise.results import RunResult
from exercise.verdicts import CHECK_NAMES, evaluate
from exercise.cases import exercise_cases
from tests.exercise.test_checker import MISTAKES, lesson_style, trusted_report

KINDS = {  # the common mistakes of `test_checker` and the kind each is counted as
    "no scaling": "scale_none", "d_k": "scale_d_k", "times": "scale_times", "sqrt(T)": "scale_sqrt_T",
    "softmax dim=-2": "softmax_queries", "softmax dim=1": "softmax_queries", "softmax dim=0": "softmax_batch",
    "no softmax": "softmax_none", "K not transposed": "scores_QK", "K.transpose(0, 1)": "scores_K_batch",
    "K.T": "scores_K_all", "K @ Q^T": "scores_KQ", "returns scores": "returns_scores",
    "returns weights": "returns_weights", "(weights, output)": "swapped_return", "float16": "precision",
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", [n for n in MISTAKES if n in KINDS])
def test_a_common_mistake_is_counted_by_its_kind_and_first_failed_check(name):
    source, failed, _ = MISTAKES[name]
    outcome = trusted_report(source).outcome
    assert outcome == CheckOutcome("failed", CHECK_NAMES.index(failed) + 1, KINDS[name]), outcome


def test_the_mistakes_of_the_issue_read_as_the_lecturer_reads_them():
    scale = trusted_report(lesson_style(scores="Q @ K.transpose(-2, -1)")).outcome
    axis = trusted_report(lesson_style(softmax="F.softmax(scores, dim=-2)")).outcome
    assert "√d_k" in outcome_line(scale, CHECK_NAMES) and "wrong axis" in outcome_line(axis, CHECK_NAMES)


def test_the_reference_passes_and_a_mask_mistake_names_its_check():
    assert trusted_report(lesson_style()).outcome == CheckOutcome("passed")
    masked = trusted_report(lesson_style(fill="scores.masked_fill(mask == 1, float('-inf'))")).outcome
    assert masked == CheckOutcome("failed", 6, None)
    assert outcome_line(masked, CHECK_NAMES) == f"Fails check 6: {CHECK_NAMES[5]}."


def test_every_known_mistakes_first_step_and_every_kind_the_checker_gives_has_a_line():
    for part, values in MISTAKE_OPTIONS.items():
        for value in values:
            if getattr(Mistake(), part) != value:
                assert f"{part}_{value}" in MISTAKE_LINES
    assert all(line.endswith(".") and len(line) <= 90 for line in MISTAKE_LINES.values())


def test_an_outcome_that_does_not_hold_together_is_refused():
    for args in (("done",), ("failed",), ("passed", 2), ("failed", 7), ("failed", 3, "made_up"), ("passed", None, "scale_none")):
        with pytest.raises(ValueError):
            CheckOutcome(*args)


@pytest.mark.parametrize(("kind", "outcome"), [("timeout", CheckOutcome("did_not_finish")), ("server", None),
                                               ("too_long", CheckOutcome("too_long")), ("empty", CheckOutcome("empty"))])
def test_an_incident_is_counted_by_whose_it_is(kind, outcome):
    assert evaluate(RunResult(incident="Stopped.", incident_kind=kind), exercise_cases()).outcome == outcome


def test_a_crash_is_a_failed_first_check():
    assert evaluate(RunResult(incident="Killed."), exercise_cases()).outcome == CheckOutcome("failed", 1, "crashed")
