"""The exercise checker's verdicts and diagnoses, on trusted code run in-process.

The sandbox that runs untrusted code is tested in `tests/exercise/test_sandbox.py` (what a submission
can and cannot do) and `tests/exercise/test_sandbox_security.py` (attacks, as root and unprivileged).
"""

from __future__ import annotations

import inspect
import textwrap

import numpy as np
import pytest
import torch

import core.exercise_solution as solution
from core.attention import scaled_dot_product_attention as numpy_attention
from core.worked_example import worked_example
from exercise.cases import SKELETON, exercise_cases
from exercise.demos import mistake_demo
from exercise.mistakes import Mistake, all_mistakes, match_mistake, mistake_function, mistaken_attention
from exercise.results import decode_case, run_trusted
from exercise.verdicts import (
    CHECK_ALLCLOSE,
    CHECK_CAUSAL,
    CHECK_NAMES,
    CHECK_ROWS,
    CHECK_RUNS,
    CHECK_SHAPE,
    CHECK_WORKED,
    ExerciseReport,
    evaluate,
)
from tests.exercise.test_numbers import UNREADABLE
from tests.helpers import lesson_values as lesson

SOLUTION_SOURCE = inspect.getsource(solution)
CASES = exercise_cases()


def student(body: str) -> str:
    """A complete submission around `body`, the inside of the student's function."""
    return ("import math\nimport torch\nimport torch.nn.functional as F\n\n\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n" + textwrap.indent(textwrap.dedent(body), "    "))


def lesson_style(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))",
                 fill="scores.masked_fill(mask == 0, float('-inf'))",
                 softmax="F.softmax(scores, dim=-1)", ret="weights @ V, weights") -> str:
    """The lesson's solution with one line swapped for a mistake."""
    return student(f"""
        scores = {scores}
        if mask is not None:
            scores = {fill}
        weights = {softmax}
        return {ret}
    """)


def trusted_function(source: str):
    """The function defined by source written in the test suite (never do this with user code)."""
    namespace: dict = {}
    exec(compile(source, "<test submission>", "exec"), namespace)  # noqa: S102 - our own test code
    return namespace["scaled_dot_product_attention"]


def trusted_report(source: str) -> ExerciseReport:
    """Check source written in the test suite by running it in-process (never do this with user code)."""
    return evaluate(run_trusted(trusted_function(source), CASES), CASES)


def verdicts(report: ExerciseReport) -> dict[str, bool]:
    return {c.name: c.passed for c in report.checks}


def message(report: ExerciseReport, name: str) -> str:
    return next(c.message for c in report.checks if c.name == name)


# =========================================================================== inputs and known mistakes


def test_cases_are_the_lessons_inputs_in_float32():
    by_name = {c.name: c for c in CASES}
    assert by_name["random"].Q.shape == (2, 5, 16) and by_name["random"].Q.dtype == np.float32
    assert by_name["probe"].Q.shape == (4, 4, 4)
    ex = worked_example(0)
    np.testing.assert_allclose(by_name["worked"].Q, lesson.Q, atol=1e-6)
    np.testing.assert_allclose(by_name["worked"].V, lesson.V, atol=1e-6)
    np.testing.assert_array_equal(by_name["worked_causal"].mask, np.tril(np.ones((3, 3))))
    assert by_name["worked"].Q.dtype == np.float32 and ex.X.shape == (3, 4)


def test_the_correct_formula_matches_core_and_pytorch():
    for case in CASES:
        out, weights = mistaken_attention(case.Q, case.K, case.V, mask=case.mask)
        mask = None if case.mask is None else case.mask.astype(bool)
        ref_out, ref_w = numpy_attention(case.Q, case.K, case.V, mask=mask)
        np.testing.assert_allclose(out, ref_out, atol=1e-12)
        np.testing.assert_allclose(weights, ref_w, atol=1e-12)
        t = [torch.from_numpy(a) for a in (case.Q, case.K, case.V)]
        attn_mask = None if mask is None else torch.from_numpy(mask)
        torch_out = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=attn_mask).numpy()
        np.testing.assert_allclose(out, torch_out, atol=1e-5)


@pytest.mark.parametrize("mistake", [m for m in all_mistakes() if len(m.wrong_parts()) == 1], ids=repr)
def test_every_single_mistake_is_recognised_as_itself(mistake):
    for case in CASES[:2]:  # the lesson's shape if the mistake runs on it, else the square probe
        try:
            out, _ = mistaken_attention(case.Q, case.K, case.V, mistake)
        except ValueError:
            continue
        assert match_mistake(case, out) == mistake
        break
    else:
        pytest.fail(f"{mistake} runs on no test case")


def test_mistake_list_has_no_duplicates_and_puts_simple_ones_first():
    mistakes = all_mistakes()
    assert len(set(mistakes)) == len(mistakes) and Mistake() not in mistakes
    counts = [len(m.wrong_parts()) for m in mistakes]
    assert counts == sorted(counts) and counts[0] == 1
    assert all(m.describe() for m in mistakes)


def test_mistaken_shapes_raise_like_pytorch():
    case = CASES[0]  # (2, 5, 16): Q @ K cannot be multiplied
    with pytest.raises(ValueError):
        mistaken_attention(case.Q, case.K, case.V, Mistake(scores="QK"))


# =========================================================================== verdicts (trusted, in-process)


def test_the_reference_solution_passes_every_check_in_process():
    report = trusted_report(SOLUTION_SOURCE)
    assert report.passed and [c.name for c in report.checks] == list(CHECK_NAMES)
    assert report.diagnoses == []
    np.testing.assert_allclose(np.round(report.worked_output, 3), lesson.OUTPUT)
    assert np.all(report.causal_weights[np.triu_indices(3, 1)] == 0)


MISTAKES = {  # id: (the student's source, the first check that fails, words of the diagnosis)
    "no scaling": (lesson_style(scores="Q @ K.transpose(-2, -1)"), CHECK_ALLCLOSE, "No scaling"),
    "d_k, not sqrt": (lesson_style(scores="Q @ K.transpose(-2, -1) / Q.size(-1)"), CHECK_ALLCLOSE,
                      "instead of √d_k"),
    "times sqrt": (lesson_style(scores="Q @ K.transpose(-2, -1) * Q.size(-1) ** 0.5"), CHECK_ALLCLOSE,
                   "Multiplied"),
    "sqrt(T)": (lesson_style(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.size(1))"), CHECK_ALLCLOSE,
                "wrong dimension"),
    "softmax dim=-2": (lesson_style(softmax="F.softmax(scores, dim=-2)"), CHECK_ROWS,
                       "Softmax over the wrong dimension"),
    "softmax dim=1": (lesson_style(softmax="F.softmax(scores, dim=1)"), CHECK_ROWS,
                      "Softmax over the wrong dimension"),
    "softmax dim=0": (lesson_style(softmax="F.softmax(scores, dim=0)"), CHECK_ROWS, "batch dimension"),
    "no softmax": (lesson_style(softmax="scores"), CHECK_ROWS, "No softmax"),
    "K not transposed": (lesson_style(scores="Q @ K / math.sqrt(Q.size(-1))"), CHECK_RUNS, "K not transposed"),
    "K.transpose(0, 1)": (lesson_style(scores="Q @ K.transpose(0, 1) / math.sqrt(Q.size(-1))"), CHECK_RUNS,
                          "over the batch dimension"),
    "K.T": (lesson_style(scores="Q @ K.T / math.sqrt(Q.size(-1))"), CHECK_RUNS, "reverses all three dimensions"),
    "K @ Q^T": (lesson_style(scores="K @ Q.transpose(-2, -1) / math.sqrt(Q.size(-1))"), CHECK_ALLCLOSE, "swapped"),
    "returns scores": (lesson_style(ret="scores, weights"), CHECK_SHAPE, "Returned the scores"),
    "returns weights": (lesson_style(ret="weights, weights"), CHECK_SHAPE, "Returned the attention weights"),
    "(weights, output)": (lesson_style(ret="weights, weights @ V"), CHECK_SHAPE, "Output and weights swapped"),
    "float16": (lesson_style(ret="(weights.half() @ V.half()).float(), weights"), CHECK_ALLCLOSE,
                "lower precision"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch warns about K.T on 3-D tensors and dim-less softmax
@pytest.mark.parametrize(("source", "failed", "diagnosis"), list(MISTAKES.values()), ids=list(MISTAKES))
def test_each_common_mistake_gets_its_diagnosis(source, failed, diagnosis):
    report = trusted_report(source)
    assert not report.passed
    first_failed = next(c.name for c in report.checks if not c.passed)
    assert first_failed == failed
    assert any(diagnosis in d for d in report.diagnoses), report.diagnoses


def test_two_mistakes_at_once_are_both_named():
    report = trusted_report(lesson_style(scores="Q @ K.transpose(-2, -1)", softmax="F.softmax(scores, dim=-2)"))
    assert any("No scaling" in d for d in report.diagnoses)
    assert any("wrong dimension" in d for d in report.diagnoses)


@pytest.mark.parametrize(
    ("fill", "expected"),
    [
        ("scores.masked_fill(mask == 1, float('-inf'))", "polarity reversed"),
        ("scores.masked_fill(mask.bool(), -1e9)", "polarity reversed"),
        ("scores.masked_fill(mask == 0, 0.0)", "e⁰ = 1"),
        ("scores", "no effect"),
        ("scores.masked_fill(mask == 0, -100.0)", "not exactly 0"),
    ],
)
def test_mask_mistakes_are_diagnosed_in_the_causal_check(fill, expected):
    report = trusted_report(lesson_style(fill=fill))
    v = verdicts(report)
    assert all(v[name] for name in CHECK_NAMES[:-1]) and not v[CHECK_CAUSAL]
    assert expected in message(report, CHECK_CAUSAL)


def test_weights_zeroed_after_the_softmax_are_diagnosed():
    source = student("""
        weights = F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
        if mask is not None:
            weights = weights * mask
        return weights @ V, weights
    """)
    assert "after the softmax" in message(trusted_report(source), CHECK_CAUSAL)


AFTER_SOFTMAX = {  # id: (what follows `weights = softmax(scores)` in the student's code, words of the message)
    "masked_fill -inf": ("weights = weights.masked_fill(mask == 0, float('-inf'))",
                         "above it they are -inf, so the rows no longer sum to 1"),
    "where -inf": ("weights = torch.where(mask == 1, weights, float('-inf'))",
                   "above it they are -inf, so the rows no longer sum to 1"),
    "multiplied by the mask": ("weights = weights * mask", "above it they are 0, so the rows no longer sum to 1"),
    "masked_fill -1e9": ("weights = weights.masked_fill(mask == 0, -1e9)", "above it they are -1e9"),
    "-inf, then divided by the row sums": ("weights = weights.masked_fill(mask == 0, float('-inf'))\n"
                                           "weights = weights / weights.sum(dim=-1, keepdim=True)",
                                           "divided by its sum"),
    "multiplied, then a second softmax": ("weights = F.softmax(weights * mask, dim=-1)", "e⁰ = 1"),
    "-inf, then a second softmax": ("weights = F.softmax(weights.masked_fill(mask == 0, float('-inf')), dim=-1)",
                                    "One softmax is enough"),
    "-inf added": ("weights = weights + (1 - mask) * float('-inf')", "-inf (3 of them) and nan (6 of them)"),
}


@pytest.mark.parametrize(("after", "words"), list(AFTER_SOFTMAX.values()), ids=list(AFTER_SOFTMAX))
def test_a_mask_applied_after_the_softmax_is_named(after, words):
    source = student(f"""
        weights = F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
        if mask is not None:
{textwrap.indent(after, " " * 12)}
        return weights @ V, weights
    """)
    report = trusted_report(source)
    assert all(verdicts(report)[name] for name in CHECK_NAMES[:-1])
    said = message(report, CHECK_CAUSAL)
    assert "the mask was applied after the softmax" in said.lower(), said
    assert "Apply the mask to the scores, before the softmax" in said and words in said, said
    assert "future" not in said and not UNREADABLE.search(said), said


def test_a_mask_with_no_effect_is_not_said_to_come_after_the_softmax():
    source = student("""
        if mask is None and Q.size(-2) == 3:
            raise ValueError("the worked example without a mask is refused, so it cannot be compared")
        weights = F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
        return weights @ V, weights
    """)
    said = message(trusted_report(source), CHECK_CAUSAL)
    assert "after the softmax" not in said and "attend to the future" in said, said


def test_a_boolean_only_mask_passes_with_a_note():
    report = trusted_report(lesson_style(fill="scores.masked_fill(~mask, float('-inf'))"))
    assert report.passed
    assert "boolean mask" in message(report, CHECK_CAUSAL)


def test_returning_only_the_output_passes_the_early_checks_and_says_so():
    report = trusted_report(lesson_style(ret="weights @ V"))
    v = verdicts(report)
    assert v[CHECK_RUNS] and v[CHECK_SHAPE] and v[CHECK_ALLCLOSE] and v[CHECK_WORKED]
    assert not v[CHECK_ROWS] and not v[CHECK_CAUSAL]
    assert "only the output" in message(report, CHECK_RUNS)
    assert "returns only the output" in message(report, CHECK_ROWS)


def test_a_function_without_a_mask_parameter_is_told_to_add_one():
    report = trusted_report(student("return F.softmax(Q @ K.transpose(-2, -1) / Q.size(-1) ** 0.5, -1) @ V, None")
                            .replace(", mask=None", ""))
    assert "mask=None" in message(report, CHECK_CAUSAL)


def test_the_skeleton_fails_clearly():
    report = trusted_report(SKELETON)
    assert not report.passed
    assert "NotImplementedError" in message(report, CHECK_RUNS)
    assert "write your attention here" in message(report, CHECK_RUNS)


def test_the_report_holds_what_the_submission_said_and_the_page_shows_it_as_typed():
    from ui.layout import as_markdown

    said = "[click me](http://x.example) $x^2$ :red[alarm] **bold** d_k"
    report = trusted_report(student(f'raise ValueError("{said}")'))
    text = message(report, CHECK_RUNS)
    assert said in text  # plain text in the report: no escapes for the command line to undo
    assert r"\[click me\](http\://x.example) \$x^2\$ \:red\[alarm\] \*\*bold\*\* d\_k" in as_markdown(text)


def test_a_function_for_batches_only_passes_the_stretch_with_a_note():
    report = trusted_report(lesson_style(scores="Q @ K.transpose(1, 2) / math.sqrt(Q.size(-1))"))
    assert report.passed
    assert "needs a batch dimension" in message(report, CHECK_WORKED)
    assert "IndexError" in message(report, CHECK_WORKED)


def test_valid_lengths_instead_of_a_mask_are_recognised_on_a_batch_of_one():
    from tests.exercise.corpus import BUGS

    report = trusted_report(BUGS["the d2l.ai textbook's valid_lens"].source)
    v = verdicts(report)
    assert all(v[name] for name in CHECK_NAMES[:-1]) and not v[CHECK_CAUSAL]
    said = message(report, CHECK_CAUSAL)
    assert "Dimension out of range" not in said, said  # the error without a batch, which the worked example explained
    assert "on a batch of one" in said and "does not match the shape" in said, said
    assert "valid lengths, not as a mask" in said and "[1, 2, 3]" in said, said


def test_the_runner_keeps_the_batched_error_and_calls_with_valid_lengths():
    from exercise.runner import run_case
    from tests.exercise.corpus import BUGS

    attention = trusted_function(BUGS["the d2l.ai textbook's valid_lens"].source)
    by_name = {c.name: c for c in CASES}
    worked = run_case(attention, by_name["worked_causal"].as_json())
    assert not worked["ok"] and "Dimension out of range" in worked["error"]
    assert "does not match the shape" in worked["batched_error"]
    assert np.shape(worked["as_lengths"]["weights"]["data"]) == (3, 3)  # the batch of one taken off again
    batched = run_case(attention, by_name["random_causal"].as_json())
    assert "batched_error" not in batched and np.shape(batched["as_lengths"]["weights"]["data"]) == (2, 5, 5)


def test_the_runner_calls_a_function_that_refuses_the_mask_with_a_key_padding_mask():
    from exercise.runner import run_case
    from tests.exercise.corpus import BUGS

    attention = trusted_function(BUGS["a key-padding mask reshaped"].source)
    result = run_case(attention, {c.name: c for c in CASES}["random_causal"].as_json())
    assert not result["ok"] and "invalid for input of size 25" in result["error"]
    weights = np.array(result["as_padding"]["weights"]["data"])  # (2, 5, 5): the last key padded for every query
    assert weights.shape == (2, 5, 5) and np.all(weights[..., -1] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-6)


def test_a_mask_refused_as_floats_and_as_booleans_reports_the_lessons_float_mask():
    from exercise.runner import run_case

    def attention(Q, K, V, mask=None):
        if mask is not None:
            raise TypeError(f"cannot use a {mask.dtype} mask")
        return solution.scaled_dot_product_attention(Q, K, V)

    by_name = {c.name: c for c in CASES}
    result = run_case(attention, by_name["random_causal"].as_json())
    assert "torch.float32 mask" in result["error"] and "mask_note" not in result


def test_missing_return_is_pointed_out():
    report = trusted_report(student("scores = Q @ K.transpose(-2, -1)"))
    assert "forget `return`" in message(report, CHECK_RUNS)


def test_mistake_demos_compute_the_quiz_answers():
    d_k = mistake_demo(Mistake(scale="d_k"))
    assert not d_k.allclose and d_k.max_abs_diff > 0.1
    assert d_k.largest_weight < d_k.largest_weight_correct  # dividing by 16 flattens the rows
    assert d_k.row_sum_range == pytest.approx((1.0, 1.0))
    dim = mistake_demo(Mistake(softmax="queries"))
    assert dim.first_failed_check == CHECK_ROWS
    assert mistake_demo(Mistake(returns="scores")).first_failed_check == CHECK_SHAPE


def test_mistake_function_runs_through_the_runner_like_a_submission():
    run = run_trusted(mistake_function(Mistake()))
    assert evaluate(run, CASES).passed


# =========================================================================== untrusted data from the runner


@pytest.mark.parametrize(
    "msg",
    [
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": [[1, 2], [3]], "shape": [2, 2]}},
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": [1, 2, 3], "shape": [2, 5, 16]}},
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": "lots", "shape": "big"}, "weights": 7},
        {"stage": "case", "ok": True, "kind": "surprise", "output": None},
        {"stage": "case", "ok": False, "error": {"not": "a string"}},
        {"stage": "case", "ok": True, "kind": "single", "output": {"data": [[1e400]], "shape": [1, 1]}},
    ],
)
def test_malformed_runner_messages_never_raise(msg):
    res = decode_case(msg)
    run = run_trusted(solution.scaled_dot_product_attention)
    run.cases["random"] = res
    report = evaluate(run, CASES)
    assert len(report.checks) == len(CHECK_NAMES)




def test_worked_answers_are_pytorchs_on_the_worked_cases():
    from exercise.cases import worked_answers

    answers = worked_answers()
    causal = next(c for c in exercise_cases() if c.name == "worked_causal")
    q, k, v = (torch.from_numpy(a.astype(np.float64)) for a in (causal.Q, causal.K, causal.V))
    scores = (q @ k.T / np.sqrt(q.shape[-1])).masked_fill(torch.from_numpy(causal.mask) == 0, float("-inf"))
    np.testing.assert_allclose(answers.causal_weights, torch.softmax(scores, dim=-1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(answers.output, lesson.OUTPUT, atol=5e-4)
    assert answers.tokens == tuple(worked_example(0).tokens)
