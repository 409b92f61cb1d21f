"""What a check came to, as a few words a class can be counted by: `CheckOutcome`, and each kind's one line.

A report's outcome (`exercise.verdicts.ExerciseReport.outcome`) is its kind (`OUTCOME_KINDS`: passed, failed, did not
finish, ...), the first check that failed (1 to 6, the checklist's order) and the kind of the first diagnosis
(`MISTAKE_LINES`' keys), never the student's code or the diagnosis's text. `outcome_line` says one in a line, in the
checker's words, for the lecturer's bars and the class's summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from exercise.results import RunResult

#: Every check's outcome kind: the code passed, failed a check, ran out of time, or could not be run as sent.
PASSED = "passed"
FAILED = "failed"
DID_NOT_FINISH = "did_not_finish"
EMPTY = "empty"
TOO_LONG = "too_long"
MALFORMED = "malformed"
OUTCOME_KINDS = (PASSED, FAILED, DID_NOT_FINISH, EMPTY, TOO_LONG, MALFORMED)

_OUTCOME_LINES = {
    DID_NOT_FINISH: "Did not finish: the code was still running at the time limit (an endless loop?).",
    EMPTY: "No code was sent.",
    TOO_LONG: "The code was longer than the checker accepts.",
    MALFORMED: "What was sent was not Python source text.",
}

#: The one-line explanation of each mistake kind, in the checker's words (the diagnosis itself says more).
MISTAKE_LINES: dict[str, str] = {
    "scale_none": "No scaling: the scores are never divided by √d_k.",
    "scale_d_k": "Divided by d_k instead of √d_k.",
    "scale_times": "Multiplied by √d_k instead of dividing by it.",
    "scale_sqrt_T": "Divided by √seq_len: d_k taken from the wrong dimension.",
    "scores_QK": "K not transposed: `Q @ K` multiplies the wrong dimensions.",
    "scores_K_batch": "K transposed over the batch dimension (`K.transpose(0, 1)`).",
    "scores_K_all": "`K.T` on a 3-D tensor reverses every dimension, the batch's too.",
    "scores_KQ": "Queries and keys swapped: `K @ Qᵀ` instead of `Q @ Kᵀ`.",
    "softmax_queries": "Softmax over the wrong axis: the queries (`dim=-2`), not the keys.",
    "softmax_batch": "Softmax over the batch dimension (`dim=0`).",
    "softmax_none": "No softmax: the scores are used as weights.",
    "returns_scores": "Returned the scores instead of `weights @ V`.",
    "returns_weights": "Returned the weights instead of `weights @ V`.",
    "swapped_return": "Returned `(weights, output)` instead of `(output, weights)`.",
    "second_value": "The output is right, but the second value returned is not the weights.",
    "constant_scale": "Scaled by a constant instead of 1/√d_k of the tensors given.",
    "dropout": "Dropout left on: the weights change from call to call.",
    "transposed": "The weights multiply V the wrong way round.",
    "uniform": "Every weight is equal: the scores do not reach the softmax.",
    "unused_input": "One of Q, K, V is never used.",
    "always_causal": "The future is masked whatever the mask argument says.",
    "sequence_first": "The first dimension is read as the sequence.",
    "scale_factor": "The scores are scaled by the wrong factor.",
    "squash": "A bounded function squeezes the scores or the weights.",
    "scale_after_softmax": "The scale is applied after the softmax, to the weights.",
    "two_mistakes": "Two mistakes at once: a wrong step and a wrong structure.",
    "precision": "Close, but computed in lower precision (float16 or bfloat16).",
    "unrecognised": "Wrong numbers that match none of the usual mistakes.",
    # The first check failed without a diagnosis: what stopped the function from running.
    "load_error": "The code fails while loading: a syntax error, or an error outside the function.",
    "no_function": "No function called `scaled_dot_product_attention`.",
    "raised": "The function raises an error on the lesson's test.",
    "builtin": "Calls PyTorch's own `scaled_dot_product_attention`.",
    "not_tensors": "Returns something other than tensors.",
    "crashed": "The run was stopped: too much memory, a crash or an exit.",
}


@dataclass(frozen=True)
class CheckOutcome:
    """What one check came to: `kind` (`OUTCOME_KINDS`), the first failed check's number (1-6, for `FAILED`) and
    the mistake's kind (`MISTAKE_LINES`; None when the checker named none)."""

    kind: str
    failed_check: int | None = None
    mistake: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in OUTCOME_KINDS:
            raise ValueError(f"unknown outcome kind {self.kind!r}")
        if (self.kind == FAILED) != (self.failed_check is not None):
            raise ValueError("a failed check, and only one, names the check that failed")
        if self.failed_check is not None and not 1 <= self.failed_check <= 6:
            raise ValueError(f"no check {self.failed_check!r}")
        if self.mistake is not None and (self.kind != FAILED or self.mistake not in MISTAKE_LINES):
            raise ValueError(f"unknown mistake kind {self.mistake!r}")

    @property
    def passed(self) -> bool:
        return self.kind == PASSED


def outcome_line(outcome: CheckOutcome, check_names: tuple[str, ...]) -> str:
    """The outcome in one line: the mistake's, else the check that failed, else the kind's."""
    if outcome.mistake is not None:
        return MISTAKE_LINES[outcome.mistake]
    if outcome.failed_check is not None:
        return f"Fails check {outcome.failed_check}: {check_names[outcome.failed_check - 1]}."
    return _OUTCOME_LINES.get(outcome.kind, "Passes every check.")


def _why_it_did_not_run(run: RunResult) -> str:
    """The mistake kind of a function that did not run on the lesson's test (the first check failed)."""
    res = run.cases.get("random")
    if run.incident:
        return "crashed"
    if not run.loaded:
        return "load_error" if run.load_error else "no_function"
    if res is None or not res.ok:
        return "raised"
    return "builtin" if run.used_builtin else "not_tensors"


def outcome_of(run: RunResult, passed: tuple[bool, ...], mistake: str | None) -> CheckOutcome | None:
    """The outcome of a run whose checks gave `passed` (the checklist's order) and whose first diagnosis is of kind
    `mistake`; None when the checker, not the code, stopped it (the code was not judged)."""
    if run.incident_kind == "server":
        return None
    if run.incident_kind in OUTCOME_KINDS[3:]:
        return CheckOutcome(run.incident_kind)
    if run.incident_kind == "timeout":
        return CheckOutcome(DID_NOT_FINISH)
    if all(passed):
        return CheckOutcome(PASSED)
    first = passed.index(False) + 1
    if mistake is None and first == 1:
        mistake = _why_it_did_not_run(run)
    return CheckOutcome(FAILED, first, mistake)
