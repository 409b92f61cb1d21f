"""`core.lookup`: hard vs soft lookup, against PyTorch, at the temperature limits, and error messages."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.lookup import fruit_dictionary, hard_lookup, similarity_scores, soft_lookup, temperature_sweep

SHOP = fruit_dictionary()


def test_the_dictionary_is_small_fixed_and_read_only():
    assert SHOP.keys.shape == (5, 2) and SHOP.values.shape == (5,) and len(SHOP.key_names) == 5
    assert set(SHOP.queries) == {"sweet", "sour", "sweet and sour", "very sweet"}
    assert all(q.shape == (2,) for q in SHOP.queries.values())
    with pytest.raises(ValueError):
        SHOP.keys[0, 0] = 3.0
    np.testing.assert_array_equal(fruit_dictionary().keys, SHOP.keys)  # deterministic


@pytest.mark.parametrize("name", list(SHOP.queries))
def test_every_query_has_a_clear_winner(name):
    """The docstring's promise: the best key beats the runner-up by at least 0.15, so argmax is never a near-tie."""
    s = np.sort(similarity_scores(SHOP.queries[name], SHOP.keys))
    assert s[-1] - s[-2] >= 0.15 - 1e-12


def test_winners_are_the_intuitive_ones():
    best = {n: SHOP.key_names[int(np.argmax(hard_lookup(q, SHOP.keys, SHOP.values)[1]))]
            for n, q in SHOP.queries.items()}
    assert best == {"sweet": "banana", "sour": "lemon", "sweet and sour": "pineapple", "very sweet": "banana"}


def test_similarity_is_the_dot_product():
    q = np.array([0.3, -1.2])
    np.testing.assert_allclose(similarity_scores(q, SHOP.keys), [k @ q for k in SHOP.keys], atol=1e-15)
    torch_scores = torch.from_numpy(SHOP.keys.copy()) @ torch.from_numpy(q)
    np.testing.assert_allclose(similarity_scores(q, SHOP.keys), torch_scores.numpy(), atol=1e-15)


def test_hard_lookup_returns_exactly_one_value():
    result, w = hard_lookup(SHOP.queries["sour"], SHOP.keys, SHOP.values)
    j = SHOP.key_names.index("lemon")
    assert float(result) == SHOP.values[j]
    np.testing.assert_array_equal(w, np.eye(5)[j])


def test_hard_lookup_with_vector_values_and_ties():
    keys = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # keys 0 and 1 tie
    values = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    result, w = hard_lookup([2.0, 0.0], keys, values)
    np.testing.assert_array_equal(result, [1.0, 2.0, 3.0])  # ties go to the first key
    np.testing.assert_array_equal(w, [1.0, 0.0, 0.0])


@pytest.mark.parametrize("temperature", [0.01, 0.2, 1.0, 10.0])
@pytest.mark.parametrize("name", list(SHOP.queries))
def test_soft_lookup_matches_pytorch(name, temperature):
    q = SHOP.queries[name]
    result, w = soft_lookup(q, SHOP.keys, SHOP.values, temperature)
    tq, tk, tv = (torch.from_numpy(np.array(a)) for a in (q, SHOP.keys, SHOP.values))
    tw = torch.softmax(tk @ tq / temperature, dim=-1)
    np.testing.assert_allclose(w, tw.numpy(), atol=1e-14)
    np.testing.assert_allclose(result, (tw @ tv).numpy(), atol=1e-12)
    # ...and it is exactly attention with one query and scale 1/tau
    sdpa = F.scaled_dot_product_attention(tq[None, :], tk, tv[:, None], scale=1.0 / temperature)
    np.testing.assert_allclose(result, sdpa.numpy()[0, 0], atol=1e-12)


@pytest.mark.parametrize("name", list(SHOP.queries))
def test_low_temperature_becomes_the_hard_lookup(name):
    q = SHOP.queries[name]
    hard, hard_w = hard_lookup(q, SHOP.keys, SHOP.values)
    soft, soft_w = soft_lookup(q, SHOP.keys, SHOP.values, 0.01)  # the slider's lowest temperature
    assert abs(float(soft) - float(hard)) < 1e-4
    np.testing.assert_allclose(soft_w, hard_w, atol=1e-5)
    # and it gets there monotonically: further from hard at each higher temperature on the slider
    gaps = [abs(float(soft_lookup(q, SHOP.keys, SHOP.values, t)[0]) - float(hard)) for t in (0.01, 0.1, 1.0)]
    assert gaps[0] < gaps[1] < gaps[2]


def test_high_temperature_becomes_the_average():
    for q in SHOP.queries.values():
        result, w = soft_lookup(q, SHOP.keys, SHOP.values, 1e6)
        np.testing.assert_allclose(w, 0.2, atol=1e-5)
        assert abs(float(result) - SHOP.values.mean()) < 1e-4


def test_a_longer_query_is_a_lower_temperature():
    q = SHOP.queries["sweet"]
    np.testing.assert_allclose(soft_lookup(2 * q, SHOP.keys, SHOP.values, 0.4)[1],
                               soft_lookup(q, SHOP.keys, SHOP.values, 0.2)[1], atol=1e-15)


def test_tiny_temperatures_do_not_overflow():
    result, w = soft_lookup(SHOP.queries["sweet"], SHOP.keys, SHOP.values, 1e-300)
    assert np.all(np.isfinite(w)) and float(result) == SHOP.values[0]


def test_temperature_sweep_is_soft_lookup_at_each_temperature():
    taus = np.geomspace(0.01, 10, 17)
    q = SHOP.queries["sweet and sour"]
    results, weights = temperature_sweep(q, SHOP.keys, SHOP.values, taus)
    assert results.shape == (17,) and weights.shape == (17, 5)
    for t, r, w in zip(taus, results, weights, strict=True):
        r1, w1 = soft_lookup(q, SHOP.keys, SHOP.values, t)
        np.testing.assert_allclose(r, r1, atol=1e-14)
        np.testing.assert_allclose(w, w1, atol=1e-14)
    vec_results, _ = temperature_sweep(q, SHOP.keys, np.stack([SHOP.values, -SHOP.values], axis=1), taus)
    np.testing.assert_allclose(vec_results, np.stack([results, -results], axis=1), atol=1e-14)


@settings(max_examples=60, deadline=None)
@given(
    q=arrays(np.float64, 3, elements=st.floats(-5, 5)),
    keys=arrays(np.float64, (4, 3), elements=st.floats(-5, 5)),
    values=arrays(np.float64, 4, elements=st.floats(-100, 100)),
    temperature=st.floats(1e-3, 1e3),
)
def test_soft_result_is_a_convex_blend_of_the_values(q, keys, values, temperature):
    result, w = soft_lookup(q, keys, values, temperature)
    assert np.all(w >= 0) and abs(w.sum() - 1) < 1e-12
    assert values.min() - 1e-9 <= float(result) <= values.max() + 1e-9


ERRORS = {
    "query 2-D": (dict(query=np.ones((1, 2)), keys=np.ones((3, 2)), values=np.ones(3)), r"query must be one vector"),
    "d_k mismatch": (dict(query=np.ones(3), keys=np.ones((4, 2)), values=np.ones(4)),
                     r"query's d_k=3.*\(3,\).*\(4, 2\)"),
    "values count": (dict(query=np.ones(2), keys=np.ones((4, 2)), values=np.ones(3)),
                     r"one value per key.*\(4, 2\).*\(3,\)"),
    "nan": (dict(query=[np.nan, 1.0], keys=np.ones((4, 2)), values=np.ones(4)), r"query contains 1 NaN"),
    "keys 1-D": (dict(query=np.ones(2), keys=np.ones(2), values=np.ones(2)), r"keys must have at least 2 dim"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_bad_input_raises_value_error(case):
    kwargs, message = ERRORS[case]
    for fn in (hard_lookup, soft_lookup):
        with pytest.raises(ValueError, match=message):
            fn(**kwargs)


@pytest.mark.parametrize("temperature", [0.0, -1.0, np.inf, np.nan, "hot"])
def test_bad_temperatures(temperature):
    with pytest.raises(ValueError, match="temperature must be"):
        soft_lookup(SHOP.queries["sweet"], SHOP.keys, SHOP.values, temperature)


def test_bad_sweep_and_similarity_input():
    with pytest.raises(ValueError, match="positive numbers"):
        temperature_sweep(SHOP.queries["sweet"], SHOP.keys, SHOP.values, [0.1, 0.0])
    with pytest.raises(ValueError, match=r"need query \(d_k,\) and keys \(N, d_k\)"):
        similarity_scores(np.ones(3), SHOP.keys)


def test_compare_lookups_holds_each_lookups_own_answer():
    from core.lookup import compare_lookups

    shop = fruit_dictionary()
    q = shop.queries["sweet and sour"]
    taus = np.array([0.05, 0.5, 5.0])
    both = compare_lookups(q, shop.keys, shop.values, 0.5, taus)
    hard, hard_w = hard_lookup(q, shop.keys, shop.values)
    soft, soft_w = soft_lookup(q, shop.keys, shop.values, 0.5)
    assert (both.hard_result, both.soft_result) == (float(hard), float(soft))
    np.testing.assert_array_equal(both.hard_weights, hard_w)
    np.testing.assert_array_equal(both.soft_weights, soft_w)
    np.testing.assert_allclose(both.scaled_scores, similarity_scores(q, shop.keys) / 0.5)
    assert both.weighted_values.sum() == pytest.approx(both.soft_result)
    np.testing.assert_allclose(both.sweep_results[1], both.soft_result)
    np.testing.assert_array_equal(both.sweep_weights, temperature_sweep(q, shop.keys, shop.values, taus)[1])
