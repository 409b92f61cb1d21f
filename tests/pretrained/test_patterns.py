"""`pretrained.patterns.found_heads`: the heads it finds really follow their habit, recomputed from the weights."""

import numpy as np
import pytest

from pretrained.model import load_model, run_model
from pretrained.patterns import CLEAR, found_heads

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def run():
    return run_model(TEXT, load_model())


def share(weights: np.ndarray, habit: str) -> np.ndarray:
    """Each head's share of attention where the habit says, averaged over its queries, ``(L, H)``: written out
    again here, one habit at a time, rather than through `pattern_scores`' masks."""
    t = weights.shape[-1]
    if habit == "previous token":  # query i >= 1 on key i - 1
        return np.mean([weights[..., i, i - 1] for i in range(1, t)], axis=0)
    if habit == "[SEP]":  # every query on the last key
        return weights[..., :, t - 1].mean(axis=-1)
    raise ValueError(habit)


@pytest.mark.parametrize("habit", ["previous token", "[SEP]"])
def test_the_head_found_for_a_habit_is_the_one_that_follows_it_most_and_clearly(run, habit):
    (head,) = found_heads(run, (habit,))
    scores = share(run.weights, habit)  # (L, H)
    assert (head.layer, head.head) == np.unravel_index(int(np.argmax(scores)), scores.shape)
    assert head.score == pytest.approx(scores[head.layer, head.head], abs=1e-12)
    baseline = 1 / len(run.tokens)  # one key per query, against an even spread
    assert head.baseline == pytest.approx(baseline)
    assert head.score >= CLEAR * baseline and head.text == TEXT


def test_habits_come_in_the_order_asked_and_a_habit_without_queries_is_left_out(run):
    found = found_heads(run, ("[SEP]", "same word", "previous token"))
    # "same word" needs a split or repeated word: "the" appears twice, so it is there; "itself" is always there
    assert [h.habit for h in found] == ["[SEP]", "same word", "previous token"]
    single = run_model("Cats.", load_model())
    assert [h.habit for h in found_heads(single, ("same word", "itself"))] == ["itself"]
