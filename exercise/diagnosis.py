"""Which mistake the student made: found by measuring their numbers and by comparing them with the usual
wrong versions. Every diagnosis is plain text that names what to fix and the numbers that show it. (A masked
case's weights are explained by `exercise.mask_diagnosis`.)"""

from __future__ import annotations

import math

import numpy as np

from exercise.calls import dropout_diagnosis, unused_input_diagnosis
from exercise.cases import Case
from exercise.measures import D_K_POWERS, named_number, recovered_scale, scale_after_softmax
from exercise.mistakes import match_mistake, mistaken_attention, same_values
from exercise.numbers import message_template, number
from exercise.pairs import pair_diagnosis
from exercise.results import CaseResult, RunResult
from exercise.second_value import second_value_diagnosis
from exercise.squash import squash_diagnosis
from exercise.structure import always_causal_diagnosis, sequence_first_diagnosis, transposed_diagnosis
from exercise.uniform import uniform_diagnosis
from exercise.widths import width_diagnosis


def scale_diagnosis(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None,
                    worked: Case) -> str | None:
    """The factor the scores were scaled by, when a wrong constant factor is the whole mistake: named when it is
    1/√n for a width n of the student's code (`width_diagnosis`); said to be a constant when the worked example,
    with another d_k, was scaled by the same factor."""
    factor = recovered_scale(case, output, weights)
    if factor is None or factor <= 0:
        return None
    d_k = np.shape(case.Q)[-1]
    return (width_diagnosis(run.reading, factor, d_k)
            or constant_scale_diagnosis((case, factor), (worked, run.cases.get("worked")))
            or scale_message(factor, d_k))


def constant_scale_diagnosis(measured: tuple[Case, float], worked: tuple[Case, CaseResult | None]) -> str | None:
    """A scale that is one constant, whatever d_k: the factor `measured` on one case, recovered again on the
    `worked` example, whose d_k differs. Right for one of them, at most."""
    case, factor = measured
    worked_case, res = worked
    if res is None or not res.ok or res.output is None or factor <= 0:
        return None
    d_k, worked_d_k = np.shape(case.Q)[-1], np.shape(worked_case.Q)[-1]
    worked_factor = recovered_scale(worked_case, res.output, res.weights if res.kind == "pair" else None)
    if worked_d_k == d_k or worked_factor is None or not math.isclose(factor, worked_factor, rel_tol=1e-3):
        return None
    return constant_scale_message(factor, d_k, worked_d_k)


@message_template
def constant_scale_message(factor: float, d_k: int, worked_d_k: int) -> str:
    """Scores scaled by the same `factor` on the lesson's test (`d_k`) and on the worked example (`worked_d_k`)."""
    divisor = 1 / factor if factor > 0 else math.inf
    whole = math.isfinite(divisor) and divisor > 1 and abs(divisor - round(divisor)) < 1e-3 * divisor
    how = f"divided by {number(divisor)}" if whole else f"multiplied by {number(factor)}"
    return (f"Your scores are {how} on every test, whatever d_k is: the same with d_k = {d_k} as on the worked "
            f"example, where d_k = {worked_d_k}. That is a constant, not 1/√d_k: the formula divides them by "
            f"√d_k = √{d_k} = {number(math.sqrt(d_k))} on the one and √{worked_d_k} = "
            f"{number(math.sqrt(worked_d_k))} on the other. d_k is the size of the last dimension of Q and K: "
            "`Q.size(-1)`, and the divisor is its square root: `Q.size(-1) ** 0.5`.")


@message_template
def scale_message(factor: float, d_k: int) -> str:
    """Scores scaled by `factor` instead of 1/√d_k."""
    right = f"the formula divides them by √d_k = √{d_k} = {number(math.sqrt(d_k))}"
    if 0 < factor < 1:
        said = f"Your scores are divided by {named_number(1 / factor)}, while {right}."
    else:
        said = f"Your scores are multiplied by {named_number(factor)}, while {right}."
    return (said + " d_k is the size of the last dimension of Q and K: `Q.size(-1)`, and the divisor is its "
                   "square root: `Q.size(-1) ** 0.5`.")


def scale_after_softmax_diagnosis(run: RunResult, case: Case, output: np.ndarray,
                                  weights: np.ndarray | None) -> str | None:
    """The scale multiplied into the weights after a softmax of unscaled scores; the softmax's line when the
    source has one softmax."""
    p = scale_after_softmax(case, output, weights)
    if p is None:
        return None
    d_k = np.shape(case.Q)[-1]
    softmax = run.reading.softmax
    where = f"on {softmax[0].shown()}, " if len(softmax) == 1 else ""
    return scale_after_softmax_message(float(d_k**p), d_k, D_K_POWERS[p], weights is not None, where)


@message_template
def power_said(value: float, d_k: int, power_name: str) -> str:
    """``0.25 = 1/√16 = 1/√d_k``: a power of d_k, its value and its name."""
    return f"{number(value)} = {power_name.replace('d_k', str(d_k))} = {power_name}"


@message_template
def scale_after_softmax_message(row_sum: float, d_k: int, power_name: str, has_weights: bool, where: str) -> str:
    """The weights (or the output) of a softmax of unscaled scores multiplied by `row_sum`, a power of d_k."""
    said = power_said(row_sum, d_k, power_name)
    seen = (f"Every row of your weights sums to {said}, not 1 (d_k = {d_k})" if has_weights else
            f"Your output is that of unscaled scores multiplied by {said} (d_k = {d_k}), so your weights sum to "
            f"{number(row_sum)}, not 1")
    return (f"{seen}: the scale was applied after the softmax, to the weights, where it multiplies every weight by "
            "the same number. It belongs on the scores, before the softmax: "
            f"{where}take the softmax of `scores / Q.size(-1) ** 0.5`, and leave the weights as it gives them.")


def scaled_rows_message(row_sum: float, d_k: int, power_name: str) -> str:
    """Rows of weights that all sum to `row_sum`, a power of d_k: the scale applied after the softmax."""
    return (f"Every row sums to {power_said(row_sum, d_k, power_name)} (d_k = {d_k}): a softmax multiplied by "
            "the scale after it. The scale belongs on the scores, before the softmax (see the diagnosis).")


def diagnose(run: RunResult, cases: tuple[Case, ...]) -> list[str]:
    """Recognise the mistake: the usual wrong versions first, then what the numbers measure."""
    return diagnose_with_kind(run, cases)[0]


def _measured(run: RunResult, case: Case, output: np.ndarray, weights: np.ndarray | None,
              worked: Case) -> tuple[str | None, str | None]:
    """The first mistake the numbers measure, as (its kind in `exercise.mistake_kinds`, its text)."""
    for kind, found in (("uniform", lambda: uniform_diagnosis(run, case, output, weights)),
                        ("unused_input", lambda: unused_input_diagnosis(run, case, output)),
                        ("always_causal", lambda: always_causal_diagnosis(run, case, output, weights)),
                        ("sequence_first", lambda: sequence_first_diagnosis(case, output, weights)),
                        ("scale_factor", lambda: scale_diagnosis(run, case, output, weights, worked)),
                        ("squash", lambda: squash_diagnosis(run, case, output, weights)),
                        ("scale_after_softmax", lambda: scale_after_softmax_diagnosis(run, case, output, weights))):
        text = found()
        if text is not None:
            return kind, text
    return None, None


#: The cases that can show a mistake, in the order they are read: the lesson's shape if the function ran on it,
#: else the square probe, else the worked example (a function for 2-D tensors only).
SHOWN_BY = ("random", "probe", "worked")


def diagnose_with_kind(run: RunResult, cases: tuple[Case, ...]) -> tuple[list[str], str | None]:
    """The diagnoses in words, and the kind of the first (a key of `exercise.mistake_kinds.MISTAKE_LINES`; None
    when nothing was diagnosed). A known mistake of several wrong steps is the kind of its first step; a known step
    together with a structural mistake is `two_mistakes`."""
    by_name = {c.name: c for c in cases}
    for name in SHOWN_BY:
        res = run.cases.get(name)
        if res is not None and res.ok and res.output is not None:
            return _diagnose_case(run, by_name[name], res, by_name["worked"])
    return [], None


def _diagnose_case(run: RunResult, case: Case, res: CaseResult, worked: Case) -> tuple[list[str], str | None]:
    """What `case`'s result `res` shows: its two values swapped, a right output, dropout, or a wrong output."""
    exp_out, exp_w = mistaken_attention(case.Q, case.K, case.V)
    weights = res.weights if res.kind == "pair" else None
    if res.kind == "pair" and same_values(res.output, exp_w) and same_values(res.weights, exp_out):
        return (["Output and weights swapped: you return `(weights, output)`; the lesson's order is "
                 "`(output, weights)`."], "swapped_return")
    if same_values(res.output, exp_out):
        return _right_output(run, case, res, exp_w, worked)
    dropout = dropout_diagnosis(run, case, weights)
    if dropout is not None:
        return [dropout], "dropout"
    return _wrong_output(run, case, res, weights, worked, exp_out)


def _right_output(run: RunResult, case: Case, res: CaseResult, exp_w: np.ndarray,
                  worked: Case) -> tuple[list[str], str | None]:
    """A right output: the second value is not the weights, or the scale is a constant that is √d_k only here."""
    if res.kind == "pair" and res.weights is not None and not same_values(res.weights, exp_w):
        said = second_value_diagnosis(case, res.weights)
        return (["Your output is right, but " + (said[0].lower() + said[1:] if said else
                 "the second value you return is not the attention weights: return the weights after the softmax.")],
                "second_value")
    # right for this d_k: a constant that happens to be √d_k here is still a constant
    constant = constant_scale_diagnosis((case, 1 / math.sqrt(np.shape(case.Q)[-1])), (worked, run.cases.get("worked")))
    return ([constant], "constant_scale") if constant else ([], None)


def _wrong_output(run: RunResult, case: Case, res: CaseResult, weights: np.ndarray | None, worked: Case,
                  exp_out: np.ndarray) -> tuple[list[str], str | None]:
    """A wrong output: a pair of mistakes, a known wrong version, a measured mistake, lower precision, or none."""
    # Weights multiplied the wrong way first: the known mistakes explain WᵀV as two (K Qᵀ, softmax over dim=-2).
    transposed = transposed_diagnosis(case, res.output, weights)
    mistake = None if transposed else match_mistake(case, res.output)
    measured_kind, measured = ("transposed", transposed) if transposed else (None, None) if mistake else (
        _measured(run, case, res.output, weights, worked))
    # Two mistakes at once are named as the pair that explains them, rather than as three or more known ones.
    pair = None if measured or (mistake and len(mistake.wrong_parts()) < 3) else pair_diagnosis(
        run, case, res.output, weights)
    if pair is not None:
        return list(pair), "two_mistakes"
    if mistake is not None:
        return list(mistake.describe()), "_".join(mistake.wrong_parts()[0])
    if measured is not None:
        return [measured], measured_kind
    if same_values(res.output, exp_out, rtol=1e-2, atol=1e-3):
        return (["Close, but not within `allclose`'s tolerance: did you compute in lower precision "
                 f"(float16 / bfloat16)? Your output is {res.output_desc}."], "precision")
    return (["Your output does not match any of the usual mistakes. Compare each step with the formula: "
             "scores `Q @ K.transpose(-2, -1)`, divided by `Q.size(-1) ** 0.5`, `softmax(dim=-1)`, then `@ V`."],
            "unrecognised")
