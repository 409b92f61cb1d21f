"""The lesson's checklist, judged from the data a run sent back: `evaluate`.

Six checks in the lesson's order (runs, shape, rows sum to 1, ``allclose`` with PyTorch, the
worked example in float32, exact causal zeros), each with a message that says what was seen.
Pure: only the data in the `RunResult` is used, so the same run always gives the same report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.reference import max_abs_diff, torch_scaled_dot_product_attention
from core.worked_example import worked_example
from exercise.calls import dropout_diagnosis
from exercise.causal_check import causal_check
from exercise.cases import (
    ALLCLOSE_ATOL,
    ALLCLOSE_RTOL,
    BATCH,
    D_K,
    FUNCTION_NAME,
    ROW_SUM_ATOL,
    SEQ_LEN,
    WORKED_ATOL,
    Case,
)
from exercise.diagnosis import diagnose_with_kind, scaled_rows_message
from exercise.limits import OUTPUT_CAP_BYTES, bytes_in_words
from exercise.measures import D_K_POWERS, d_k_power, normalised_axes
from exercise.mistake_kinds import CheckOutcome, outcome_of
from exercise.numbers import message_template, number, numbers
from exercise.results import CaseResult, RunResult, not_run, only_the_batch_failed
from exercise.second_value import second_value

CHECK_RUNS = "The function exists and runs"
CHECK_SHAPE = f"Output shape is ({BATCH}, {SEQ_LEN}, {D_K})"
CHECK_ROWS = "Each row of the weights sums to 1"
CHECK_ALLCLOSE = "torch.allclose with F.scaled_dot_product_attention"
CHECK_WORKED = "Stretch: the worked example in float32"
CHECK_CAUSAL = "Stretch: causal mask, exact zeros above the diagonal"
#: The checklist, in the lesson's order.
CHECK_NAMES = (CHECK_RUNS, CHECK_SHAPE, CHECK_ROWS, CHECK_ALLCLOSE, CHECK_WORKED, CHECK_CAUSAL)


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""

    name: str
    passed: bool
    message: str


@dataclass
class ExerciseReport:
    """What `check_submission` found. ``checks`` follow `CHECK_NAMES`, always all six.

    Besides the checklist: ``diagnoses`` (the recognised mistakes, in words), ``incident``
    (a timeout, a crash, ... or None), the student's printed output (truncated), the worked
    example's output and the causal weights their function produced (for the page's charts),
    and how the code was isolated (``isolation``, ``limits``). ``outcome`` is what the check came to, in a few
    words a class can be counted by (`exercise.mistake_kinds`); None when the checker, not the code, stopped it.
    """

    passed: bool
    checks: list[Check]
    diagnoses: list[str] = field(default_factory=list)
    incident: str | None = None
    stdout: str = ""
    stderr: str = ""
    worked_output: np.ndarray | None = None
    causal_weights: np.ndarray | None = None
    elapsed_s: float = 0.0
    run_s: float | None = None
    isolation: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    sandbox_uid: int | None = None
    outcome: CheckOutcome | None = None


@message_template
def printed_message(megabytes: float, kept: str) -> str:
    """How much the student's code printed, when it is more than the checker keeps."""
    return f"(It printed {number(megabytes)} MB; only the first {kept} are kept.)"


#: Said when the batched test raised but the worked example, without a batch, ran.
UNBATCHED_RAN = ("Without a batch, on the worked example's 3×4 tensors, it ran: the worked example and the causal mask "
                 "are judged below. Count dimensions from the end (`K.transpose(-2, -1)`, `softmax(dim=-1)`, "
                 "`Q.size(-1)`, `torch.matmul` instead of `torch.mm`) so that the same code works with a batch.")


def _runs_check(run: RunResult) -> tuple[Check, CaseResult | None]:
    res = run.cases.get("random")
    if run.incident and (res is None or not res.ok):
        return Check(CHECK_RUNS, False, run.incident), None
    if not run.loaded:
        if run.load_error:
            msg = f"Your code raised an error while loading: {run.load_error}"
            if run.load_error.startswith("SystemExit"):
                msg += ". The checker needs the process to keep running: remove `sys.exit()`/`exit()`/`quit()`."
            return Check(CHECK_RUNS, False, msg), None
        if not run.found:
            others = f" (it defines: {', '.join(run.callables)})" if run.callables else ""
            return Check(CHECK_RUNS, False, f"There is no function called `{FUNCTION_NAME}`{others}: "
                                            "keep the name and signature from the skeleton."), None
        return Check(CHECK_RUNS, False, f"`{FUNCTION_NAME}` exists but is not a function."), None
    if res is None:
        return Check(CHECK_RUNS, False, run.incident or "Your function was not called (the run stopped)."), None
    shape = f"({BATCH}, {SEQ_LEN}, {D_K})"
    if not res.ok:
        said = f"Called on Q, K, V of shape {shape}, your function raised {res.error}"
        return Check(CHECK_RUNS, False, said + (". " + UNBATCHED_RAN if only_the_batch_failed(run) else "")), None
    if run.used_builtin:
        return Check(CHECK_RUNS, False, "Your function calls `torch.nn.functional.scaled_dot_product_attention` "
                                        "itself: the exercise is to write it from the formula."), res
    if res.kind == "other":
        hint = " Did you forget `return`?" if res.output_desc == "a NoneType" else ""
        return Check(CHECK_RUNS, False, f"Your function returned {res.output_desc}; it should return "
                                        f"`(output, weights)`, two tensors.{hint}"), None
    if res.output is None:
        return Check(CHECK_RUNS, False, f"Your function returned {res.output_desc}, which is not a tensor of "
                                        "numbers the checker can read."), None
    extra = ""
    if run.stdout_bytes > OUTPUT_CAP_BYTES:
        kept = bytes_in_words(OUTPUT_CAP_BYTES)
        extra = " " + printed_message(run.stdout_bytes / 1e6, kept)
    if res.kind == "single":
        return Check(CHECK_RUNS, True, "It ran and returned only the output. That is enough for the shape, "
                                       "allclose and worked-example checks; return `(output, weights)` like the "
                                       "lesson's version to unlock the two weight checks." + extra), res
    return Check(CHECK_RUNS, True, f"It ran on Q, K, V of shape {shape} and returned `(output, weights)`.{extra}"), res


def evaluate(run: RunResult, cases: tuple[Case, ...]) -> ExerciseReport:
    """Turn a run into the checklist and the diagnoses. Pure: only the data in `run` is used."""
    by_name = {c.name: c for c in cases}
    rand = by_name["random"]
    expected_out = torch_scaled_dot_product_attention(rand.Q, rand.K, rand.V)  # (2, 5, 16), float32
    checks: list[Check] = []
    skipped = not_run(run)

    runs, res = _runs_check(run)
    checks.append(runs)
    # A function that raised on the batched test but ran without a batch is still judged on the worked example.
    ran = res is not None or only_the_batch_failed(run)
    out = None if res is None else res.output
    weights = None if res is None or res.kind != "pair" else res.weights

    # 2. shape
    want = (BATCH, SEQ_LEN, D_K)
    if out is None:
        checks.append(Check(CHECK_SHAPE, False, skipped))
    elif out.shape == want:
        checks.append(Check(CHECK_SHAPE, True, f"The output has shape {want}: one {D_K}-vector per token."))
    else:
        checks.append(Check(CHECK_SHAPE, False, f"The output has shape {out.shape}, expected {want} "
                                                "(batch, seq_len, d_v)."))

    # 3. weights rows sum to 1
    checks.append(_rows_check(run, res, weights, rand))

    # 4. allclose with PyTorch
    if out is None:
        checks.append(Check(CHECK_ALLCLOSE, False, skipped))
    elif out.shape != expected_out.shape:
        checks.append(Check(CHECK_ALLCLOSE, False, f"Cannot compare: your output has shape {out.shape}, "
                                                   f"PyTorch's has {expected_out.shape}."))
    else:
        diff = max_abs_diff(out, expected_out) if np.all(np.isfinite(out)) else float("nan")
        ok = bool(np.allclose(out, expected_out, rtol=ALLCLOSE_RTOL, atol=ALLCLOSE_ATOL))
        checks.append(Check(CHECK_ALLCLOSE, ok, allclose_message(ok, diff)))

    worked_check, worked_out = _worked_check(run, ran)
    checks.append(worked_check)
    causal_passed, causal_said, causal_w = causal_check(run, (by_name["worked_causal"], by_name["random_causal"]),
                                                        ran)
    checks.append(Check(CHECK_CAUSAL, causal_passed, causal_said))

    diagnoses, mistake = diagnose_with_kind(run, cases)
    return ExerciseReport(
        passed=all(c.passed for c in checks), checks=checks, diagnoses=diagnoses,
        outcome=outcome_of(run, tuple(c.passed for c in checks), mistake),
        incident=run.incident, stdout=run.stdout, stderr=run.stderr, worked_output=worked_out,
        causal_weights=causal_w, elapsed_s=run.elapsed_s, run_s=run.run_s, isolation=run.isolation,
        limits=run.limits, sandbox_uid=run.sandbox_uid,
    )


def _rows_check(run: RunResult, res: CaseResult | None, weights: np.ndarray | None, case: Case) -> Check:
    if res is None:
        return Check(CHECK_ROWS, False, not_run(run))
    if res.kind == "single":
        return Check(CHECK_ROWS, False, "Your function returns only the output, so the weights cannot be checked: "
                                        "return `output, weights` (the weights after the softmax).")
    want = (BATCH, SEQ_LEN, SEQ_LEN)
    if weights is None:
        return Check(CHECK_ROWS, False, f"The second value returned is {res.weights_desc}, not a tensor of weights.")
    if weights.shape != want:
        return Check(CHECK_ROWS, False, f"The weights have shape {weights.shape}, expected {want}: one row per "
                                        "query, one column per key.")
    sums = weights.sum(axis=-1)
    if not np.all(np.isfinite(sums)):
        return Check(CHECK_ROWS, False, "Some weights are NaN or infinite.")
    dev = float(np.max(np.abs(sums - 1.0)))
    if dev <= ROW_SUM_ATOL and float(weights.min()) >= 0:
        return Check(CHECK_ROWS, True, rows_sum_to_one_message(dev))
    if dev <= ROW_SUM_ATOL:
        return Check(CHECK_ROWS, False, negative_weights_message(weights.min()))
    return Check(CHECK_ROWS, False, row_sums_message(sums.min(), sums.max()) + " " + _softmax_axis_hint(run, case, weights))


def _softmax_axis_hint(run: RunResult, case: Case, weights: np.ndarray) -> str:
    """Which axis the weights were normalised over, measured on the weights themselves; or dropout, left on."""
    if dropout_diagnosis(run, case, weights) is not None:
        return "They are a softmax's with dropout left on (see the diagnosis)."
    returned = second_value(case, weights)
    if returned is not None:
        return f"They are {returned}."
    if np.all(weights == 1.0):
        return (f"Every weight is exactly 1, so each row sums to {weights.shape[-1]}, the number of keys: the "
                "softmax ran over an axis of length 1, such as a heads axis you added. `nn.Softmax()` and "
                "`F.softmax` without `dim` pick one for you (dim=1 on a 4-D tensor, dim=0 on a 3-D one). "
                "Pass `dim=-1`, the keys.")
    axes = [a for a in normalised_axes(weights, atol=ROW_SUM_ATOL) if a != -1]
    if -2 in axes:
        return ("Each column sums to 1 instead: the softmax ran over dim=-2, the queries. Use `dim=-1`, so that "
                "each query's row of weights sums to 1.")
    if axes and axes[0] == -weights.ndim:
        return (f"The weights sum to 1 across the batch (dim=0) instead, over {weights.shape[0]} different "
                "sequences. Use `dim=-1`.")
    sums = weights.sum(axis=-1)
    p = d_k_power(float(sums.flat[0]), D_K)
    if p is not None and np.allclose(sums, sums.flat[0], rtol=1e-4, atol=0):
        return scaled_rows_message(float(D_K**p), D_K, D_K_POWERS[p])
    return "No axis of the weights sums to 1: is there a softmax at all?"


def _worked_check(run: RunResult, ran: bool) -> tuple[Check, np.ndarray | None]:
    lesson = worked_example(0).output  # (3, 4), float64: the lesson's printed output
    res = run.cases.get("worked")
    if not ran or res is None:
        return Check(CHECK_WORKED, False, not_run(run)), None
    if not res.ok:
        msg = f"On the worked example's Q, K, V of shape {lesson.shape[0]}×{lesson.shape[1]} (no batch "
        msg += f"dimension) your function raised {res.error}"
        return Check(CHECK_WORKED, False, msg), None
    out = res.output
    if out is None or out.shape != lesson.shape:
        got = res.output_desc if out is None else f"shape {out.shape}"
        return Check(CHECK_WORKED, False, f"Expected a {lesson.shape} output, got {got}."), None
    diff = max_abs_diff(out, lesson) if np.all(np.isfinite(out)) else float("inf")
    note = "" if res.batch_note is None else " " + batch_note(res.batch_note, lesson.shape)
    return Check(CHECK_WORKED, diff <= WORKED_ATOL, worked_message(out[0], lesson[0], diff) + note), out


@message_template
def allclose_message(ok: bool, diff: float) -> str:
    """The allclose check: its verdict and the largest difference from PyTorch's output."""
    return (f"`torch.allclose(yours, F.scaled_dot_product_attention(Q, K, V), atol={number(ALLCLOSE_ATOL)})` is "
            f"{ok}: the largest difference is {number(diff)}.")


@message_template
def rows_sum_to_one_message(deviation: float) -> str:
    """Rows that sum to 1, up to `deviation`."""
    return f"`weights.sum(dim=-1)` is all ones (largest deviation {number(deviation, 2)})."


@message_template
def negative_weights_message(smallest: float) -> str:
    """Rows that sum to 1 with negative weights in them."""
    return f"The rows sum to 1 but some weights are negative ({number(smallest)}): they are not a softmax."


@message_template
def row_sums_message(lowest: float, highest: float) -> str:
    """The range of the row sums of weights that should sum to 1."""
    return f"`weights.sum(dim=-1)` ranges from {number(lowest)} to {number(highest)}, not all ones."


@message_template
def worked_message(yours: np.ndarray, lesson: np.ndarray, diff: float) -> str:
    """The first row of the worked example's output, the student's beside the lesson's."""
    return (f"Your first row is {numbers(yours, 4)}, the lesson's is {numbers(lesson, 4)} "
            f"(largest difference {number(diff, 2)}).")


def batch_note(error: str, shape: tuple[int, ...]) -> str:
    """What the checker did for a function written for batches only."""
    return (f"Your function needs a batch dimension: on the worked example's {shape[0]}×{shape[1]} tensors it "
            f"raised {error}, so the checker added one (`Q.unsqueeze(0)`) and took it off the results again. "
            "Counting dimensions from the end (`K.transpose(-2, -1)`, `softmax(dim=-1)`, `Q.size(-1)`) makes "
            "the same code work with and without a batch.")
