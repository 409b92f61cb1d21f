"""`cost.measure`: the three attention implementations, the bounded measurement (tiny sizes, no timing asserts)."""

import numpy as np
import pytest
import torch

from cost.measure import (
    MAX_SEQ_LEN,
    METHODS,
    CostRun,
    Measurement,
    core_attention,
    fit_slopes,
    fused_attention,
    loglog_slope,
    measure_attention_cost,
    naive_torch_attention,
    predicted_bytes,
)


def test_the_three_implementations_agree():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 1, 2, 9, 4))  # each (B, H, T, d_k)
    expected = core_attention(q, k, v)
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    np.testing.assert_allclose(naive_torch_attention(tq, tk, tv).numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(fused_attention(tq, tk, tv).numpy(), expected, atol=1e-12)


def test_predicted_bytes_grow_quadratically_only_for_the_stored_matrix():
    assert 3.8 < predicted_bytes("naive", 2048, 64) / predicted_bytes("naive", 1024, 64) < 4.0
    assert predicted_bytes("fused", 2048, 64) == 2 * predicted_bytes("fused", 1024, 64)
    with pytest.raises(ValueError, match="unknown method 'flash'"):
        predicted_bytes("flash", 8, 4)


def test_loglog_slope_recovers_the_exponent():
    n = np.array([64, 128, 256, 512])
    p, c = loglog_slope(n, 3.0 * n**2.0)
    assert p == pytest.approx(2.0) and np.exp(c) == pytest.approx(3.0)
    assert loglog_slope(n, 5.0 * n)[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two sizes"):
        loglog_slope([64, 64], [1.0, 2.0])
    with pytest.raises(ValueError, match="same length"):
        loglog_slope([64, 128], [1.0])


def test_tiny_measurement_records_every_method_and_size():
    calls = []
    threads = torch.get_num_threads()
    run = measure_attention_cost([16, 8, 32], d_k=4, progress=lambda f, m: calls.append((f, m)))
    assert torch.get_num_threads() == threads  # restored
    assert [(m.method, m.n) for m in run.measurements] == [(m, n) for n in (8, 16, 32) for m in METHODS]
    assert run.notes == () and run.d_k == 4 and run.n_heads == 1 and run.elapsed > 0
    for m in run.measurements:
        assert m.seconds > 0 and 3 <= m.repeats <= 7 and m.memory_bytes > 0
        assert m.nxn_bytes == m.n**2 * (8 if m.method == "core" else 4)
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    assert any("T = 32" in msg for _, msg in calls)


def test_memory_of_the_naive_version_is_the_stored_matrices():
    run = measure_attention_cost([256], d_k=8, methods=("naive", "fused"))
    naive, fused = run.measurements
    # scores, scaled scores and weights: three float32 T x T tensors are allocated.
    assert naive.memory_bytes >= 3 * naive.nxn_bytes
    assert fused.memory_bytes < naive.nxn_bytes  # the fused kernel never forms the matrix


def test_budgets_stop_the_run():
    run = measure_attention_cost([8, 16, 32], d_k=4, methods=("naive",), time_budget=1e-12, measure_memory=False)
    assert [m.n for m in run.measurements] == [8]
    assert len(run.notes) == 1 and "stopped after T=8" in run.notes[0]
    run = measure_attention_cost([8, 16], d_k=4, methods=("core",), max_bytes=1000, measure_memory=False)
    assert run.measurements == () and "would need about" in run.notes[0]
    run = measure_attention_cost([8, 16], d_k=4, methods=("fused",), measure_memory=False, threads=None)
    assert len(run.measurements) == 2 and all(np.isnan(m.memory_bytes) for m in run.measurements)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(seq_lens=[MAX_SEQ_LEN * 2]), "above the cap"),
        (dict(seq_lens=[]), "seq_lens is empty"),
        (dict(seq_lens=[8], methods=("flash",)), "methods must be"),
        (dict(seq_lens=[8], time_budget=0), "budgets must be positive"),
        (dict(seq_lens=[0]), "sequence length must be a positive integer"),
    ],
)
def test_measurement_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        measure_attention_cost(**kwargs)


def fake_run(ns, time_power, memory_power, memory=True):
    rows = tuple(Measurement(method=m, n=n, seconds=1e-9 * n**time_power, repeats=3,
                             memory_bytes=(8.0 * n**memory_power[m]) if memory else float("nan"), nxn_bytes=4 * n * n)
                 for n in ns for m in METHODS)
    return CostRun(measurements=rows, notes=(), elapsed=0.1, d_k=64, n_heads=1)


def test_fit_slopes_reads_the_exponents_from_large_sizes():
    # The smallest size is off the line (fixed overhead): it must be left out of the fit.
    run = fake_run([64, 256, 512, 1024], 2.0, {"core": 2.0, "naive": 2.0, "fused": 1.0})
    run = CostRun(measurements=tuple(m if m.n > 64 else Measurement(m.method, 64, 1.0, 3, m.memory_bytes, 0)
                                     for m in run.measurements), notes=(), elapsed=0.1, d_k=64, n_heads=1)
    fits = fit_slopes(run, fit_from=256)
    assert set(fits) == set(METHODS)
    assert fits["naive"].time_slope == pytest.approx(2.0) and fits["fused"].memory_slope == pytest.approx(1.0)
    assert (fits["core"].n_min, fits["core"].n_max) == (256, 1024)
    assert fits["naive"].seconds(2048) == pytest.approx(1e-9 * 2048**2)
    assert fits["fused"].memory(np.array([512.0]))[0] == pytest.approx(8.0 * 512)


def test_fit_slopes_falls_back_to_all_sizes_and_skips_single_points():
    fits = fit_slopes(fake_run([64, 128], 2.0, {"core": 2.0, "naive": 2.0, "fused": 1.0}, memory=False))
    assert fits["core"].n_min == 64 and np.isnan(fits["core"].memory_slope)
    assert fit_slopes(fake_run([64], 2.0, {"core": 2.0, "naive": 2.0, "fused": 1.0})) == {}
