"""Frequencies, wavelengths, continuous curves and position similarity of the sinusoidal encoding."""

import numpy as np
import pytest
import torch

from core import positional_encoding
from core.positional_analysis import (
    angular_frequencies,
    distinct_positions,
    encoding_table,
    offset_invariance_error,
    position_similarity,
    positional_encoding_at,
    similarity_at_offset,
    wavelengths,
)


@pytest.mark.parametrize("d_model", [1, 2, 7, 8, 512])
def test_frequencies_and_wavelengths_follow_the_formula(d_model):
    i = np.arange(d_model) // 2
    omega = angular_frequencies(d_model)
    np.testing.assert_allclose(omega, 10000.0 ** (-2 * i / d_model), rtol=1e-14)
    np.testing.assert_allclose(wavelengths(d_model), 2 * np.pi * 10000.0 ** (2 * i / d_model), rtol=1e-14)
    assert wavelengths(d_model)[0] == pytest.approx(2 * np.pi)  # the fastest pair repeats every 2π positions


def test_pairs_share_a_frequency_and_wavelengths_grow_geometrically():
    lam = wavelengths(8)
    np.testing.assert_array_equal(lam[0::2], lam[1::2])
    ratios = lam[2::2] / lam[0:-2:2]
    np.testing.assert_allclose(ratios, 10000.0 ** (2 / 8))  # the same factor from pair to pair
    np.testing.assert_allclose(lam, [6.283, 6.283, 62.832, 62.832, 628.319, 628.319, 6283.185, 6283.185], atol=1e-3)


@pytest.mark.parametrize("seq_len, d_model", [(5, 8), (1, 1), (9, 7), (64, 33), (512, 512)])
def test_encoding_at_integer_positions_is_the_table(seq_len, d_model):
    np.testing.assert_allclose(positional_encoding_at(np.arange(seq_len), d_model),
                               positional_encoding(seq_len, d_model), atol=1e-12)


def test_chosen_dims_are_columns_of_the_table_and_waves_repeat_every_wavelength():
    dims = [6, 0, 3]
    pe = positional_encoding(20, 8)
    np.testing.assert_allclose(positional_encoding_at(np.arange(20.0), 8, dims), pe[:, dims], atol=1e-12)
    p = np.linspace(0, 10, 41)
    lam = wavelengths(8)
    for d in range(8):
        np.testing.assert_allclose(positional_encoding_at(p + lam[d], 8, [d]), positional_encoding_at(p, 8, [d]),
                                   atol=1e-9)


def test_similarity_is_the_gram_matrix_of_the_table():
    pe = positional_encoding(30, 16)
    sim = position_similarity(pe)
    np.testing.assert_allclose(sim, (torch.from_numpy(pe) @ torch.from_numpy(pe).T).numpy(), atol=1e-12)
    np.testing.assert_allclose(np.diag(sim), 16 / 2)  # each sine/cosine pair has length 1
    assert np.all(sim[0, 0] >= sim[0, 1:])  # nothing is more similar to position 0 than itself
    assert sim[10, 11] > sim[10, 20]  # nearby positions are more alike than distant ones


@pytest.mark.parametrize("d_model", [2, 8, 64])
def test_even_width_similarity_depends_only_on_the_offset(d_model):
    t = 40
    sim = position_similarity(positional_encoding(t, d_model))
    s = similarity_at_offset(np.arange(t), d_model)
    for k in range(t):
        np.testing.assert_allclose(np.diagonal(sim, k), s[k], atol=1e-12)
    assert offset_invariance_error(positional_encoding(t, d_model)) < 1e-12


@pytest.mark.parametrize("d_model", [1, 3, 7])
def test_odd_width_breaks_offset_invariance_but_not_at_position_0(d_model):
    t = 60
    pe = positional_encoding(t, d_model)
    np.testing.assert_allclose(position_similarity(pe)[0], similarity_at_offset(np.arange(t), d_model), atol=1e-12)
    assert offset_invariance_error(pe) > 1e-6


@pytest.mark.parametrize(("t", "d_model"), [(1, 1), (9, 4), (23, 7), (40, 64)])
def test_offset_invariance_error_is_the_largest_gap_over_every_pair(t, d_model):
    pe = positional_encoding(t, d_model)
    sim, s = position_similarity(pe), similarity_at_offset(np.arange(t), d_model)
    gaps = [abs(sim[p, q] - s[q - p]) for p in range(t) for q in range(p, t)]  # every q = p + k, k >= 0
    assert offset_invariance_error(pe) == max(gaps)
    assert encoding_table(t, d_model).offset_error == max(gaps)


def test_closed_form_sum_of_cosines():
    omega = angular_frequencies(6)[0::2]
    k = np.array([0.0, 1.0, 2.5])
    np.testing.assert_allclose(similarity_at_offset(k, 6), np.cos(k[:, None] * omega).sum(1))
    assert similarity_at_offset([0], 6)[0] == 3.0


def test_every_position_gets_its_own_row():
    assert distinct_positions(positional_encoding(512, 512)) == 512
    assert distinct_positions(positional_encoding(5, 8)) == 5
    assert distinct_positions(np.array([[0.0, 1.0], [0.0, 1.0 + 1e-12], [1.0, 0.0]])) == 2  # equal after rounding
    assert distinct_positions(np.array([[-1e-12, 1.0], [1e-12, 1.0], [0.0, 1.0]])) == 1  # -0.0 and 0.0 alike
    for shape in [(7, 3), (30, 2)]:
        rows = np.random.default_rng(0).integers(0, 3, size=shape) / 3  # repeated rows, as np.unique counts them
        assert distinct_positions(rows) == len(np.unique(rows, axis=0))
    with pytest.raises(ValueError, match=r"\(positions, d_model\) matrix"):
        distinct_positions(np.zeros(3)[None, None])


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="dims must lie in 0..7"):
        positional_encoding_at([0.0, 1.0], 8, [8])
    with pytest.raises(ValueError, match="non-empty 1-D list of integer"):
        positional_encoding_at([0.0], 8, [])
    with pytest.raises(ValueError, match="non-empty 1-D list of integer"):
        positional_encoding_at([0.0], 8, [0.5])
    with pytest.raises(ValueError, match="positions must be 1-D"):
        positional_encoding_at(np.zeros((2, 2)), 8)
    with pytest.raises(ValueError, match="NaN or infinite"):
        positional_encoding_at([np.nan], 8)
    with pytest.raises(ValueError, match=r"\(positions, d_model\) matrix"):
        position_similarity(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="positive integer"):
        wavelengths(0)
    with pytest.raises(ValueError, match="offsets must be 1-D"):
        similarity_at_offset(np.zeros((2, 2)), 8)


def test_encoding_table_matches_the_encoding_and_its_dot_products():
    from core.positional_analysis import encoding_table

    table = encoding_table(7, 6)
    pe = positional_encoding(7, 6)
    np.testing.assert_array_equal(table.pe, pe)
    np.testing.assert_allclose(table.similarity, pe @ pe.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(table.offset_formula, table.similarity[0], atol=1e-12)  # even width: offset only
    assert table.distinct == 7 and table.offset_error < 1e-12


def test_sampled_waves_pass_through_the_table():
    from core.positional_analysis import sampled_waves

    waves = sampled_waves(9, 16, (0, 3, 10))
    np.testing.assert_allclose(waves.table_values, positional_encoding(9, 16)[:, [0, 3, 10]], atol=1e-12)
    assert waves.fine_positions[0] == 0 and waves.fine_positions[-1] == 8
    assert len(waves.fine_positions) >= 25 * 8 / (2 * np.pi)  # >= 25 samples per period of the fastest wave
