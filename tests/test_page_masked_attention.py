"""The masked-attention page, run headless: exact zeros, −∞ scores, generation steps, PyTorch parity."""

import numpy as np
import pytest

from core import positional_encoding
from core.embeddings import embed_tokens, random_projections
from core.masking import masked_self_attention
from tests.apptest_helpers import chart_specs, heatmaps, run_page

PAGE = "app_pages/masked_attention.py"
SENTENCE = "the cat sat on the mat and then it fell fast asleep".split()


def expected(seq_len, seed, causal):
    x = embed_tokens(SENTENCE[:seq_len], 8, seed) + positional_encoding(seq_len, 8)
    return masked_self_attention(x, *random_projections(8, seed, n=3), causal=causal)


def metrics(at):
    return {m.label: m.value for m in at.metric}


def masked_scores_frame(at):
    """The data of the masked-scores heatmap (Streamlit sends -inf as null, so the label carries it)."""
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", [spec]):
            if str(sub.get("title", "")).startswith("scaled scores"):
                return frames[sub["data"]["name"]].sort_values(["i", "j"])
    raise AssertionError("no masked-scores heatmap on the page")


def step_panels(at):
    """Panel title -> weight row of the generation-step bar charts."""
    for spec, frames in chart_specs(at):
        panels = spec.get("hconcat", [])
        if panels and all("mask" in str(p.get("title")) and "token" in str(p.get("title")) for p in panels):
            return {p["title"]: frames[p["data"]["name"]] for p in panels}
    raise AssertionError("no generation-step chart on the page")


def test_defaults_causal_mask_gives_exact_zeros_and_matches_pytorch():
    at = run_page(PAGE)
    assert not at.exception
    assert at.slider(key="seq_len").value == 6 and at.toggle(key="causal").value is True
    assert at.slider(key="step").value == 4
    res = expected(6, 0, True)
    charts = heatmaps(at)
    np.testing.assert_array_equal(charts["mask (1 = may attend)"], np.tril(np.ones((6, 6))))
    cells = masked_scores_frame(at)
    above = (cells["j"] > cells["i"]).to_numpy()
    assert (cells["label"][above] == "−∞").all() and cells["masked"][above].all()
    assert not cells["masked"][~above].any()
    i, j = cells["i"][~above].to_numpy(), cells["j"][~above].to_numpy()
    np.testing.assert_allclose(cells["value"][~above], res.scores[i, j], atol=1e-12)
    assert cells["label"][~above].tolist() == [f"{v:.2f}" for v in res.scores[i, j]]
    upper = np.triu_indices(6, k=1)
    weights = charts["attention weights A"]
    assert np.all(weights[upper] == 0.0)
    np.testing.assert_allclose(weights, res.weights, atol=1e-12)
    m = metrics(at)
    assert m["max weight above the diagonal"] == "0.0"
    assert m["total weight on future tokens"] == "0.0"
    assert float(m["max |NumPy − PyTorch| of the output (is_causal=True)"]) < 1e-6
    assert float(m["max |masked row − softmax over the prefix only|"]) < 1e-12
    assert float(m["max |masked row − renormalised unmasked row|"]) < 1e-12
    # step 4 ("on"): without the mask some weight goes to "the mat"; with it, none does
    panels = step_panels(at)
    no_mask, masked = (panels[k]["weight"].to_numpy() for k in sorted(panels, key=lambda k: not k.startswith("no")))
    full = expected(6, 0, False)
    np.testing.assert_allclose(no_mask, full.weights[3], atol=1e-12)
    np.testing.assert_allclose(masked, res.weights[3], atol=1e-12)
    assert np.all(masked[4:] == 0.0) and no_mask[4:].sum() > 0
    assert float(m["weight the visible keys had without the mask"]) == pytest.approx(full.weights[3, :4].sum(),
                                                                                       abs=1e-4)
    assert any("Step 4: **the cat sat on**" in md.value for md in at.markdown)


def test_causal_off_lets_weight_leak_to_the_future():
    at = run_page(PAGE, causal="false", seed="99")
    assert not at.exception
    res = expected(6, 99, False)
    charts = heatmaps(at)
    cells = masked_scores_frame(at)
    assert not cells["masked"].any() and "−∞" not in cells["label"].tolist()
    np.testing.assert_allclose(charts["scaled scores QKᵀ/√d_k + M"], res.scores, atol=1e-12)
    np.testing.assert_allclose(charts["attention weights A"], res.weights, atol=1e-12)
    m = metrics(at)
    leak = res.weights[np.triu_indices(6, k=1)].max()
    assert float(m["max weight above the diagonal"]) == pytest.approx(leak, abs=1e-4) and leak > 0
    assert float(m["max |NumPy − PyTorch| of the output (is_causal=False)"]) < 1e-6


@pytest.mark.parametrize("seq_len, step", [(12, 12), (12, 1)])
def test_longest_sentence_at_first_and_last_step(seq_len, step):
    at = run_page(PAGE, seq_len=str(seq_len), step=str(step))
    assert not at.exception
    assert at.slider(key="step").value == step
    res = expected(seq_len, 0, True)
    assert heatmaps(at)["attention weights A"].shape == (12, 12)
    assert metrics(at)["max weight above the diagonal"] == "0.0"
    masked = next(v for k, v in step_panels(at).items() if k.startswith("causal"))
    np.testing.assert_allclose(masked["weight"], res.weights[step - 1], atol=1e-12)
    if step == seq_len:  # the last token sees everything: masked and unmasked rows agree
        assert float(metrics(at)["weight the visible keys had without the mask"]) == 1.0
    else:  # the first token sees only itself
        assert masked["weight"].tolist()[0] == 1.0


def test_a_single_token_has_no_step_slider_and_no_future():
    at = run_page(PAGE, seq_len="1")
    assert not at.exception
    assert [s.key for s in at.slider] == ["seed", "seq_len"]
    assert any("only step is t = 1" in c.value for c in at.caption)
    assert metrics(at)["max weight above the diagonal"] == "0.0"
    assert heatmaps(at)["attention weights A"].tolist() == [[1.0]]
