"""The √d_k page, run headless: defaults, every slider extreme, scaling on and off, the PyTorch parity."""

import re

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.attention import scaled_dot_product_attention
from core.scaling import random_qkv, score_sweep
from tests.helpers.apptest import chart_specs, heatmap_tooltips, heatmaps, run_page
from tests.helpers.registry import Case, PageTests, Probe, Quiz

PAGE = "app_pages/scaled_attention.py"
PARITY = "max |NumPy − PyTorch| of the output"
LARGEST = "largest weight (mean over rows)"


def metrics(at: AppTest) -> dict[str, float]:
    return {m.label: float(m.value.replace(",", "")) for m in at.metric}


def sweep_charts(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """The faceted d_k-sweep charts as (spec, their one table)."""
    return [(s, next(iter(f.values()))) for s, f in chart_specs(at) if "facet" in s]


def current_d_k_markers(at: AppTest) -> set[int]:
    """The d_k every sweep chart marks as current (its rule and ring filter on it)."""
    found = set()
    for spec, _ in sweep_charts(at):
        for layer in spec["spec"]["layer"]:
            for t in layer.get("transform", []):
                found |= {int(m) for m in re.findall(r'datum\["d_k"\] === (\d+)', str(t.get("filter", "")))
                          if '"series"' in t["filter"]}
    return found


def test_defaults():
    at = run_page(PAGE)
    assert not at.exception
    assert at.select_slider(key="d_k").value == 64 and at.slider(key="seq_len").value == 8
    assert at.toggle(key="scaled").value is True
    m = metrics(at)
    assert m[PARITY] < 1e-5
    q, k, v = random_qkv(8, 64, 0)
    _, weights = scaled_dot_product_attention(q, k, v)
    maps = heatmaps(at)
    np.testing.assert_allclose(maps["attention weights"], weights)
    np.testing.assert_allclose(maps["scores QKᵀ / √d_k"], q @ k.T / 8.0)
    assert m[LARGEST] == pytest.approx(weights.max(-1).mean(), abs=1e-3)
    assert m["variance of these scores"] == pytest.approx((q @ k.T / 8.0).var(), rel=1e-2)
    # the sweep: 11 widths, both series, the numbers of core.score_sweep, and the current d_k marked
    sweep = score_sweep(8, 0)
    tables = pd.concat([df for _, df in sweep_charts(at)])
    curves = tables[tables["role"] == "series"]
    assert set(curves["panel"]) == {"Variance of the scores", "Largest weight in a row", "Row entropy (nats)",
                                    "Softmax Jacobian norm ‖diag(p) − ppᵀ‖_F"}
    for panel, raw, scaled in [("Variance of the scores", sweep.var_raw, sweep.var_scaled),
                               ("Largest weight in a row", sweep.max_weight_raw, sweep.max_weight_scaled),
                               ("Softmax Jacobian norm ‖diag(p) − ppᵀ‖_F", sweep.jacobian_norm_raw,
                                sweep.jacobian_norm_scaled)]:
        rows = curves[curves["panel"] == panel]
        np.testing.assert_allclose(rows[rows["name"].str.startswith("unscaled")]["value"], raw)
        np.testing.assert_allclose(rows[rows["name"].str.startswith("scaled")]["value"], scaled)
        assert list(rows["d_k"][:11]) == [2**i for i in range(11)]
    assert current_d_k_markers(at) == {64}
    assert not at.warning


def test_d_k_1024_unscaled_saturates_and_scaled_does_not():
    at = run_page(PAGE, d_k="1024", scaled="false")
    assert not at.exception
    m = metrics(at)
    assert m[LARGEST] > 0.9 and m["softmax Jacobian norm (mean)"] < 0.1
    assert m["variance of these scores"] > 500
    assert m[PARITY] < 1e-5  # scale=1.0 on both sides
    assert "Saturated" in at.warning[0].value
    assert "scores QKᵀ" in heatmaps(at)
    assert current_d_k_markers(at) == {1024}

    at.toggle(key="scaled").set_value(True).run()
    assert not at.exception
    m = metrics(at)
    assert m[LARGEST] < 0.6 and m["softmax Jacobian norm (mean)"] > 0.2
    assert m["variance of these scores"] == pytest.approx(1.0, abs=0.3)
    assert m[PARITY] < 1e-5
    assert not at.warning


@pytest.mark.parametrize("seq_len, d_k, scaled", [("2", "1", "true"), ("2", "1", "false"), ("32", "1024", "false"),
                                                  ("32", "1024", "true")])
def test_slider_extremes(seq_len, d_k, scaled):
    at = run_page(PAGE, seq_len=seq_len, d_k=d_k, scaled=scaled)
    assert not at.exception
    t = int(seq_len)
    maps = heatmaps(at)
    assert maps["attention weights"].shape == (t, t)
    np.testing.assert_allclose(maps["attention weights"].sum(axis=1), 1.0, atol=1e-12)
    assert metrics(at)[PARITY] < 1e-5
    assert current_d_k_markers(at) == {int(d_k)}


def test_seed_and_malformed_url_values():
    at = run_page(PAGE, seed="7", d_k="3", seq_len="99")
    assert not at.exception
    assert at.select_slider(key="d_k").value == 64 and at.slider(key="seq_len").value == 8  # fell back
    q, k, v = random_qkv(8, 64, 7)
    np.testing.assert_allclose(heatmaps(at)["attention weights"], scaled_dot_product_attention(q, k, v)[1])


@pytest.mark.parametrize("scaled", ["true", "false"])
def test_a_weight_cell_shows_the_arithmetic_behind_it(scaled):
    at = run_page(PAGE, d_k="1024", seq_len="6", scaled=scaled)
    assert not at.exception
    q, k, v = random_qkv(6, 1024, 0)
    _, weights = scaled_dot_product_attention(q, k, v, scale=None if scaled == "true" else 1.0)
    tips = heatmap_tooltips(at, "attention weights")
    if scaled == "true":
        np.testing.assert_allclose(tips["raw score q_i · k_j"].astype(float), q @ k.T)
        np.testing.assert_allclose(tips["scaled score q_i · k_j / √1024"].astype(float), q @ k.T / 32.0)
        exps = tips["exp(scaled − row max)"]
    else:
        np.testing.assert_allclose(tips["score q_i · k_j (not scaled)"].astype(float), q @ k.T)
        exps = tips["exp(score − row max)"]
    # the tooltip's own numbers give the weight: exp(s - row max) / row sum, finite even unscaled at d_k = 1024
    exps, sums = exps.astype(float), tips["row sum of exp"].astype(float)
    assert np.isfinite(exps).all()
    np.testing.assert_allclose(exps / sums, weights, rtol=1e-3, atol=1e-4)
    shown = np.array([float(text.rsplit("= ", 1)[1]) for text in tips["A_ij = exp / row sum"].ravel()])
    np.testing.assert_allclose(shown, weights.ravel(), atol=1e-4)


NUMBER = r"(\d[\d,]*(?:\.\d+)?)"  # a number as the page prints it, without a sentence's full stop


def num(text: str) -> float:
    return float(text.replace(",", ""))


def page_text(at: AppTest) -> str:
    return "\n".join(el.value for el in at.markdown)


@pytest.mark.parametrize("query", [{}, {"seq_len": "2", "d_k": "1", "seed": "5"},
                                   {"seq_len": "32", "d_k": "1024", "scaled": "false", "seed": "3"},
                                   {"seq_len": "8", "d_k": "16", "scaled": "false"}])
def test_section_2s_sentences_quote_the_sweep_and_the_draw_on_screen(query):
    """The ring is the sweep's mean at the current d_k, not section 1's one draw; every trend is quoted with the
    values the curves go between, at several settings."""
    at = run_page(PAGE, **query)
    assert not at.exception
    seq_len, d_k = int(query.get("seq_len", 8)), int(query.get("d_k", 64))
    seed, scaled = int(query.get("seed", 0)), query.get("scaled", "true") == "true"
    sweep = score_sweep(seq_len, seed)
    i = int(np.flatnonzero(sweep.d_k == d_k)[0])
    text = page_text(at)
    variance, weight = (sweep.var_scaled, sweep.max_weight_scaled) if scaled else (sweep.var_raw,
                                                                                    sweep.max_weight_raw)
    ring = re.search(rf"ringed points are the (\w+) means there \(score variance {NUMBER}, largest weight {NUMBER}\), "
                     rf"not the one draw of section 1, whose score variance is {NUMBER} and largest weight {NUMBER}",
                     text)
    assert ring, text
    assert ring[1] == ("scaled" if scaled else "unscaled")
    assert num(ring[2]) == pytest.approx(variance[i], rel=5e-3) and float(ring[3]) == pytest.approx(weight[i], abs=5e-4)
    m = metrics(at)
    assert num(ring[4]) == pytest.approx(m["variance of these scores"], rel=5e-3)
    assert float(ring[5]) == pytest.approx(m[LARGEST], abs=5e-4)

    bullet = re.search(rf"\*\*Largest weight\*\*: unscaled it (rises|falls) from {NUMBER} at d_k = 1 to {NUMBER} at "
                       rf"d_k = 1024.*scaled it stays between {NUMBER} and {NUMBER}", text)
    assert bullet, text
    raw = sweep.max_weight_raw
    assert bullet[1] == ("rises" if raw[-1] > raw[0] else "falls")
    np.testing.assert_allclose([float(x) for x in bullet.groups()[1:]],
                               [raw[0], raw[-1], sweep.max_weight_scaled.min(), sweep.max_weight_scaled.max()],
                               atol=5e-3)
    ratio = re.search(rf"measured over theory between {NUMBER} and {NUMBER}\); scaled it stays between {NUMBER} and "
                      rf"{NUMBER}", text)
    np.testing.assert_allclose([float(x) for x in ratio.groups()],
                               [(sweep.var_raw / sweep.d_k).min(), (sweep.var_raw / sweep.d_k).max(),
                                sweep.var_scaled.min(), sweep.var_scaled.max()], atol=5e-3)
    jac = re.search(rf"Unscaled it (rises|falls) from {NUMBER} at d_k = 1 to {NUMBER} at d_k = 1024 as the softmax "
                    rf"saturates, and scaled it stays between {NUMBER} and {NUMBER}", text)
    np.testing.assert_allclose([float(x) for x in jac.groups()[1:]],
                               [sweep.jacobian_norm_raw[0], sweep.jacobian_norm_raw[-1],
                                sweep.jacobian_norm_scaled.min(), sweep.jacobian_norm_scaled.max()], atol=5e-4)
    peak = int(np.argmax(sweep.jacobian_norm_raw))
    assert ("the unscaled curve first rises" in text) == (peak > 0)
    assert "independent random numbers with mean 0 and variance 1" in text


def test_entropy_and_the_jacobian_are_defined_behind_more_detail():
    """The idea (variance, largest weight) is on the page; the deeper quantities sit in closed "More detail"
    expanders with their definitions, so a projector shows the idea first."""
    at = run_page(PAGE)
    details = [e for e in at.expander if e.label.startswith("More detail: ")]
    assert len(details) == 2 and not any(e.proto.expanded for e in details)
    inside = [[m.label for m in e.metric] + [m.value for m in e.markdown] for e in details]
    assert {"row entropy (mean, nats)", "softmax Jacobian norm (mean)"} <= set(inside[0])
    assert any("in nats (the unit of the natural logarithm)" in t for t in inside[0])
    assert any("**Row entropy** H = −Σ_j p_j ln p_j, in nats" in t for t in inside[1])
    outside = [m.label for m in at.main.metric if not any(m in e.metric for e in details)]
    assert outside[:2] == ["variance of these scores", LARGEST]
    assert "entropy" not in " ".join(outside[:2])


# ------------------------------------------------------------------- what the shared tests know of this page


def scaled_expected(p) -> dict[str, np.ndarray]:
    Q, K, V = random_qkv(p["seq_len"], p["d_k"], p["seed"])
    _, weights = scaled_dot_product_attention(Q, K, V, scale=None if p["scaled"] else 1.0)
    scores = Q @ K.T / (np.sqrt(p["d_k"]) if p["scaled"] else 1.0)
    return {"scores QKᵀ / √d_k" if p["scaled"] else "scores QKᵀ": scores, "attention weights": weights}


SHARED = PageTests(
    probe=Probe(dict(seed=0, seq_len=8, d_k=64, scaled=True), heatmaps, scaled_expected),
    valid=[Case("scaled_attention", {"seed": "7", "seq_len": "20", "d_k": "256", "scaled": "false", "present": "true"},
                {"seed": 7, "seq_len": 20, "d_k": 256, "scaled": False, "present": True})],
    malformed=[Case("scaled_attention",
                    {"seed": "abc", "seq_len": "99", "d_k": "3", "scaled": "perhaps", "present": "maybe"},
                    {"seed": 0, "seq_len": 8, "d_k": 64, "scaled": True, "present": False})],
    data_step=("seed", (0, 1)),
    canvas=True,
    concept=True,
    quiz=Quiz("scaling_16x", "it grows towards 1"),
)
