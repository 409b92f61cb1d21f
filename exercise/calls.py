"""What the optional calls show (`exercise.cases.REPEAT`, `exercise.cases.CHANGED`): a function whose output is
random (dropout left on), and a function that never uses one of Q, K, V.

Dropout with rate p keeps each weight with probability 1 − p and divides the kept ones by 1 − p:

.. math:: \\tilde w_{ij} = \\frac{m_{ij}}{1 - p}\\, w_{ij}, \\qquad m_{ij} \\sim \\operatorname{Bernoulli}(1 - p)

so weights after dropout are exactly 0 or the softmax's times one number, 1/(1 − p), and two calls differ.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from exercise.cases import CHANGED, REPEAT, Case
from exercise.mistakes import mistaken_attention, same_values
from exercise.numbers import message_template, number
from exercise.results import RunResult, SourceLine

#: The inputs in the order the function takes them.
INPUTS = ("Q", "K", "V")


def lines_said(lines: tuple[SourceLine, ...], most: int = 2) -> str:
    """``line 7 (`…`) and line 14 (`…`)``: where the source shows something, or "" when it does not."""
    shown = [line.shown() for line in lines[:most]]
    return " and ".join(shown)


def dropout_rate(weights: np.ndarray | None, right: np.ndarray) -> float | None:
    """The rate p when `weights` are the `right` ones after dropout: some exactly 0 where the right one is not,
    every other one the right one times the same 1/(1 − p) > 1. None when they are not."""
    if weights is None or weights.shape != right.shape or not np.all(np.isfinite(weights)):
        return None
    positive = right > 1e-12
    dropped = positive & (weights == 0)
    kept = positive & (weights != 0)
    if not dropped.any() or not kept.any():
        return None
    ratios = weights[kept] / right[kept]
    ratio = float(np.median(ratios))
    if ratio <= 1 + 1e-6 or not np.allclose(ratios, ratio, rtol=1e-4, atol=0):
        return None
    return 1 - 1 / ratio


def repeat_difference(run: RunResult) -> float | None:
    """The largest difference between two calls with the very same inputs (the random test and `REPEAT`), or None
    when the second call was not made, failed or returned the same output."""
    first, again = run.cases.get("random"), run.cases.get(REPEAT)
    if first is None or again is None or first.output is None or again.output is None:
        return None
    if first.output.shape != again.output.shape or np.array_equal(first.output, again.output, equal_nan=True):
        return None
    with np.errstate(invalid="ignore"):
        return float(np.nanmax(np.abs(first.output - again.output)))


@message_template
def repeat_seen(difference: float) -> str:
    """Two calls with the same inputs whose outputs differ by up to `difference`."""
    return ("called twice with the same Q, K and V, your function returned different outputs (the largest difference "
            f"is {number(difference)})")


@message_template
def dropout_seen(dropped: int, total: int, rate: float) -> str:
    """`dropped` of `total` weights exactly 0 and the rest the softmax's scaled up by 1/(1 − `rate`)."""
    return (f"of your {number(total)} weights, {number(dropped)} are exactly 0 and every other one is the softmax's "
            f"times {number(1 / (1 - rate))} = 1/(1 − {number(rate, 2)}), so dropout with p = {number(rate, 2)} is on")


def dropout_message(seen: list[str], where: str) -> str:
    """Dropout left on, as `seen` in the numbers; `where` names the source's dropout lines."""
    only_random = len(seen) == 1 and seen[0].startswith("called")
    if only_random and not where:
        return (f"Your function is random: {seen[0]}. Something in it draws random numbers on every call, such as "
                "dropout left on; attention itself gives the same output for the same Q, K and V every time. Remove "
                "it (dropout: `training=False`).")
    said = " and ".join(seen) + (", so dropout is on" if only_random else "")
    return (f"Dropout is still active: {said}" + (f": {where}" if where else "") + ". Dropout zeroes weights at "
            "random and scales the others up; it belongs to training only, and the exercise's attention has none. "
            "`F.dropout` is in training mode unless told otherwise: pass `training=self.training` (or "
            "`training=False`), or make the `nn.Dropout` once in `__init__`, where `.eval()` switches it off, instead "
            "of inside the call.")


def dropout_diagnosis(run: RunResult, case: Case, weights: np.ndarray | None) -> str | None:
    """Dropout left on, seen in `weights` of `case` (zeros and one scale, against the right weights with the case's
    mask) or in two identical calls that differ."""
    right = mistaken_attention(case.Q, case.K, case.V, mask=case.mask)[1]
    rate = dropout_rate(weights, right)
    difference = repeat_difference(run)
    if rate is None and difference is None:
        return None
    seen = [] if difference is None else [repeat_seen(difference)]
    if weights is not None and rate is not None:
        positive = right > 1e-12
        seen.append(dropout_seen(int(np.sum((weights == 0) & positive)), int(np.sum(positive)), rate))
    return dropout_message(seen, lines_said(run.reading.dropout))


def unused_inputs(run: RunResult) -> list[str]:
    """The inputs (of Q, K, V) whose change left the output exactly as it was."""
    first = run.cases.get("random")
    if first is None or first.output is None:
        return []
    unused = []
    for name in INPUTS:
        other = run.cases.get(CHANGED[name])
        if other is not None and other.output is not None and np.array_equal(other.output, first.output):
            unused.append(name)
    return unused


def _used_instead(case: Case, unused: list[str], output: np.ndarray) -> dict[str, str]:
    """Which used input stands where each unused one belongs, when that explains `output` exactly."""
    given = dict(zip(INPUTS, (case.Q, case.K, case.V)))
    used = [n for n in INPUTS if n not in unused]
    for choice in product(used, repeat=len(unused)):
        inputs = {**given, **{u: given[c] for u, c in zip(unused, choice)}}
        try:
            out, _ = mistaken_attention(inputs["Q"], inputs["K"], inputs["V"])
        except ValueError:
            continue
        if same_values(output, out):
            return dict(zip(unused, choice))
    return {}


#: What each input is for, said when it is never used.
ROLE = {"Q": "The scores are each query's dot products with the keys: `Q @ K.transpose(-2, -1)`.",
        "K": "The scores are each query's dot products with the keys: `Q @ K.transpose(-2, -1)`.",
        "V": "The output is the weights times the values: `weights @ V`."}


def _names(names: list[str]) -> str:
    """``Q``, ``K or V``: inputs named in a sentence."""
    return " or ".join(names)


def unused_input_diagnosis(run: RunResult, case: Case, output: np.ndarray) -> str | None:
    """An input the function never uses: called again with it changed, the output did not move."""
    unused = unused_inputs(run)
    if not unused or len(unused) == len(INPUTS):
        return None
    said = [f"Your function never uses {_names(unused)}: called again with {_names(unused)} replaced by other "
            "numbers, it returned exactly the same output."]
    instead = _used_instead(case, unused, output)
    for used in dict.fromkeys(instead.values()):
        where = " and ".join(n for n in unused if instead[n] == used)
        said.append(f"It uses {used} where {where} belong{'s' if ' ' not in where else ''}: your output is exactly "
                    f"attention with {used} in place of {where}.")
    unread = [line for line in run.reading.unread
              if line.value is not None and int(line.value) < len(INPUTS) and INPUTS[int(line.value)] in unused]
    if unread:
        params = " and ".join(f"`{line.name}`" for line in unread)
        said.append(f"In your code, {params} (line {unread[0].number}) {'is' if len(unread) == 1 else 'are'} never "
                    "read.")
    said.extend(dict.fromkeys(ROLE[n] for n in unused))
    return " ".join(said)
