"""The optional calls (`exercise.cases.REPEAT`, `CHANGED`): made after the checklist's calls, skipped when the
function is slow, and what they show (`exercise.calls`)."""

from __future__ import annotations

import inspect

import numpy as np

import core.exercise_solution as solution
from exercise.calls import dropout_rate
from exercise.cases import exercise_cases
from exercise.mistakes import mistaken_attention
from exercise.runner import OPTIONAL_BUDGET_S, run_source

SOLUTION_SOURCE = inspect.getsource(solution)
CASES = exercise_cases()


def test_the_optional_calls_are_made_after_the_others_for_a_wrong_output_only_and_not_when_the_function_is_slow():
    def messages(source: str) -> list[str]:
        said: list[dict] = []
        run_source(source, [c.as_json() for c in CASES], said.append)
        return [m["name"] for m in said if m["stage"] == "case"]

    names = [c.name for c in CASES]
    assert [c.optional for c in CASES] == [False] * 5 + [True] * 4
    assert messages(SOLUTION_SOURCE) == names[:5]  # a right output leaves nothing for them to explain
    wrong = SOLUTION_SOURCE.replace("    return output, weights", "    return output + 1, weights")
    assert messages(wrong) == names
    slow = wrong.replace("    return output + 1, weights", f"""\
    start = time.process_time()
    while time.process_time() - start < {OPTIONAL_BUDGET_S / 4}:
        pass
    return output + 1, weights""").replace("import torch", "import time\nimport torch", 1)
    assert messages(slow) == names[:5]


def test_dropout_is_read_off_the_weights_zeros_and_scale():
    rand = CASES[0]
    right = mistaken_attention(rand.Q, rand.K, rand.V)[1]  # (2, 5, 5)
    kept = np.random.default_rng(0).random(right.shape) > 0.25
    assert abs(dropout_rate(right * kept / 0.75, right) - 0.25) < 1e-9
    assert dropout_rate(right, right) is None  # nothing dropped
    assert dropout_rate(right * kept, right) is None  # zeros, but the rest not scaled up
    assert dropout_rate(right * kept / np.where(kept, 0.75, 1) * (1 + 0.1 * right), right) is None  # no one scale


def test_a_random_output_without_dropout_in_the_source_is_not_said_to_be_dropout():
    from exercise.__main__ import check_file_in_process

    source = SOLUTION_SOURCE.replace("    return output, weights", "    return output + 1e-3 * torch.rand(1), weights")
    said = " ".join(check_file_in_process(source).diagnoses)
    assert "Your function is random: called twice with the same Q, K and V" in said and "dropout left on" in said
    assert "Dropout is still active" not in said
