"""The checker held against attention code as people write it (`tests.exercise.corpus`): correct code in
several styles passes, and each classic bug gets the message that names it, with its numbers."""

from __future__ import annotations

import pytest
import torch

from exercise.__main__ import check_file_in_process
from tests.exercise.corpus import BUGS, CORRECT
from tests.exercise.corpus_rarer import RARER

SUBMISSIONS = {**CORRECT, **BUGS, **RARER}


@pytest.mark.filterwarnings("ignore::UserWarning")  # nn.Softmax() without dim
@pytest.mark.parametrize("submission", SUBMISSIONS.values(), ids=SUBMISSIONS.keys())
def test_the_verdict_and_what_the_report_says(submission):
    torch.manual_seed(0)  # dropout left on draws from it: the same zeros on every run of the suite
    report = check_file_in_process(submission.source)
    said = " ".join([c.message for c in report.checks] + report.diagnoses)
    failed = [c.name for c in report.checks if not c.passed]
    assert report.passed == submission.passes, (failed, said)
    for phrase in submission.says:
        assert phrase in said, said


@pytest.mark.parametrize("name", CORRECT)
def test_correct_code_gets_no_diagnosis(name):
    assert check_file_in_process(CORRECT[name].source).diagnoses == []


@pytest.mark.parametrize("name", [n for n in RARER if "second value" in n or "logits" in n or "log-softmax" in n])
def test_a_second_value_that_is_not_the_weights_is_not_said_to_be_masked_after_the_softmax(name):
    said = " ".join(c.message for c in check_file_in_process(RARER[name].source).checks)
    assert "after the softmax" not in said, said


@pytest.mark.parametrize("name", [n for n in RARER if ", and " in n or "wrong side, divided" in n])
def test_two_mistakes_at_once_are_named_as_two(name):
    assert len(check_file_in_process(RARER[name].source).diagnoses) == 2
