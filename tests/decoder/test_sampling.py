"""Temperature, top-k and top-p against their definitions, and the seeded draw."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from decoder.sampling import MIN_TEMPERATURE, Sampling, draw_for, next_word, options_around, top_k_cut, top_p_cut

LOGITS = np.array([2.0, 1.0, 0.5, -1.0, 0.0, 1.5])
logit_vectors = st.lists(st.floats(-8, 8), min_size=2, max_size=12).map(np.array)


@given(logit_vectors, st.floats(0, 0.999))
@settings(max_examples=60, deadline=None)
def test_near_zero_temperature_and_top_k_one_are_greedy(z, u):
    greedy = next_word(z, Sampling(0.0), u)
    assert greedy.choice == int(np.argmax(z))
    assert greedy.final[greedy.choice] == 1.0
    assert next_word(z, Sampling(1.0, top_k=1), u).choice == greedy.choice
    if np.sort(z)[-1] - np.sort(z)[-2] > 0.05:  # a clear largest logit: a small tau puts (almost) all on it
        assert next_word(z, Sampling(1e-3), u).choice == greedy.choice


def test_temperature_divides_the_logits_and_flattens_as_it_grows():
    for tau in (0.5, 1.0, 2.0):
        step = next_word(LOGITS, Sampling(tau), 0.5)
        assert np.allclose(step.probs, torch.softmax(torch.tensor(LOGITS / tau), 0).numpy(), atol=1e-12)
    entropies = [-(p * np.log(p)).sum() for p in (next_word(LOGITS, Sampling(t), 0.5).probs for t in (0.3, 1, 3, 30))]
    assert entropies == sorted(entropies)
    assert entropies[-1] > 0.99 * np.log(len(LOGITS))


@given(st.lists(st.floats(0.001, 1), min_size=1, max_size=12), st.floats(0.01, 0.99))
@settings(max_examples=80, deadline=None)
def test_top_p_keeps_the_smallest_set_of_likeliest_words_whose_mass_reaches_p(raw, p):
    probs = np.array(raw) / np.sum(raw)
    kept = ~top_p_cut(probs, p)
    order = np.argsort(-probs, kind="stable")
    n = int(kept.sum())
    assert set(np.flatnonzero(kept)) == set(order[:n])  # the likeliest words
    assert probs[order[:n]].sum() >= p - 1e-12  # their mass reaches p
    assert n == 1 or probs[order[: n - 1]].sum() < p  # and one fewer would not


def test_top_k_keeps_the_k_likeliest_and_zero_keeps_all():
    probs = np.array([0.1, 0.4, 0.2, 0.3])
    assert list(np.flatnonzero(~top_k_cut(probs, 2))) == [1, 3]
    assert not top_k_cut(probs, 0).any() and not top_p_cut(probs, 1.0).any()


def test_cut_words_are_never_drawn_and_the_rest_is_renormalised():
    step = next_word(LOGITS, Sampling(1.0, top_k=4, top_p=0.7), 0.99)
    cut = step.cut_by_k | step.cut_by_p
    assert step.cut_by_k.sum() == 2 and step.cut_by_p.any()
    assert np.all(step.final[cut] == 0) and np.isclose(step.final.sum(), 1)
    assert np.allclose(step.final[~cut], step.probs[~cut] / step.probs[~cut].sum())
    assert not cut[step.choice]


def test_a_seeded_draw_is_reproducible_and_follows_the_probabilities():
    assert draw_for(3, 5) == draw_for(3, 5) != draw_for(4, 5)
    picks = np.bincount([next_word(LOGITS, Sampling(1.0), draw_for(s, 0)).choice for s in range(4000)],
                        minlength=len(LOGITS)) / 4000
    assert np.allclose(picks, next_word(LOGITS, Sampling(1.0), 0.0).probs, atol=0.03)


@pytest.mark.parametrize("bad", [dict(temperature=-1.0), dict(top_k=-1), dict(top_p=0.0), dict(top_p=1.5)])
def test_bad_settings_are_refused_with_a_message(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        Sampling(**bad)


@pytest.mark.parametrize(("probs", "p", "n_kept"), [
    ([0.5, 0.25, 0.25], 0.5, 1),  # the top word's own probability is exactly p
    ([0.05] * 20, 0.05, 1),  # twenty equal words: one reaches 0.05
    ([0.05] * 20, 0.5, 10),
    ([0.25] * 4, 0.75, 3),
    ([0.1] * 10, 0.3, 3),  # 0.1 + 0.1 + 0.1 is 0.30000000000000004 in float64: reaches 0.3
    ([0.1] * 10, 0.7, 7),  # seven tenths sum to 0.7 minus one rounding step: reaches 0.7 all the same
])
def test_top_p_at_an_exact_boundary_keeps_exactly_the_words_whose_mass_reaches_p(probs, p, n_kept):
    assert int((~top_p_cut(np.array(probs), p)).sum()) == n_kept


@given(st.integers(1, 32), st.data())
@settings(max_examples=80, deadline=None)
def test_sampling_equal_words_at_p_k_over_n_keeps_k_words_whatever_top_k_cuts_or_not(n, data):
    """n equal logits and p = k / n: the nucleus is exactly k words, through the whole pipeline (the softmax's and
    the renormalisation's rounding included), with top-k off or cutting nothing."""
    k = data.draw(st.integers(1, n))
    for top_k in (0, n):
        step = next_word(np.zeros(n), Sampling(1.0, top_k, k / n), data.draw(st.floats(0, 0.999)))
        assert int(np.count_nonzero(step.final)) == k, (n, k, top_k)


def test_sampling_a_top_word_of_probability_one_half_at_p_one_half_keeps_it_alone():
    step = next_word(np.log([0.5, 0.25, 0.125, 0.125]), Sampling(1.0, 0, 0.5), 0.9)
    assert np.count_nonzero(step.final) == 1 and step.choice == 0


@pytest.mark.parametrize("tau", [1e-310, 5e-324, 1e-7, np.finfo(float).tiny])
def test_a_temperature_too_small_to_divide_by_is_refused_where_it_is_set(tau):
    with pytest.raises(ValueError, match="temperature"):
        Sampling(tau)


def test_the_smallest_temperature_allowed_keeps_every_number_finite():
    step = next_word(np.array([3e38, -3e38, 0.0]), Sampling(MIN_TEMPERATURE), 0.5)
    assert np.all(np.isfinite(step.probs)) and step.choice == 0


@given(logit_vectors, st.floats(0, 0.999), st.sampled_from([0.01, 0.1, 1.0, 5.0]), st.integers(1, 6))
@settings(max_examples=80, deadline=None)
def test_options_around_a_drawn_word_always_hold_it(z, u, tau, n):
    step = next_word(z, Sampling(tau), u)
    options = options_around(step.probs, step.choice, n)
    order = [int(i) for i in np.argsort(-step.probs, kind="stable")]
    assert step.choice in options and len(set(options)) == len(options) == min(n, len(z))
    if step.choice in order[:n]:  # a likely draw: the options are simply the likeliest words
        assert sorted(options) == sorted(order[:n])
