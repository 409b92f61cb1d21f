"""The masked-attention page, run headless: exact zeros, −∞ scores, generation steps, PyTorch parity."""

import numpy as np
import pandas as pd
import pytest

from core import positional_encoding
from core.embeddings import embed_tokens, random_projections
from core.masking import masked_self_attention
from tests.helpers.apptest import chart_specs, heatmaps, run_page
from tests.helpers.clicks import click_cell
from tests.helpers.registry import VALID, Case, PageTests, Probe, Quiz

PAGE = "app_pages/masked_attention.py"
SENTENCE = "the cat sat on the mat and then it fell fast asleep".split()
LABELS = ["the (0)", "cat", "sat", "on", "the (4)", "mat"]  # the first six words, as the maps label them


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
    assert any("only step is s = 1, the token at position 0" in c.value for c in at.caption)
    assert metrics(at)["max weight above the diagonal"] == "0.0"
    assert heatmaps(at)["attention weights A"].tolist() == [[1.0]]


# --- Explain on hover, linked highlighting ---------------------------------------------------------------------

CLICK_KEY = "masked_cell"


def view(at, title_prefix):
    """(view spec, its data frame) of the map whose title starts with `title_prefix`."""
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", [spec]):
            if str(sub.get("title", "")).startswith(title_prefix):
                return sub, frames
    raise AssertionError(f"no map titled {title_prefix!r}…")


def tooltip_table(encoding, frame):
    """The tooltip lines of a view as a table: one column per tooltip title, rows sorted by (i, j)."""
    frame = frame.sort_values(["i", "j"]).reset_index(drop=True)
    return pd.DataFrame({t["title"]: frame[t["field"]] for t in encoding["tooltip"]} | {"i": frame["i"],
                                                                                         "j": frame["j"]})


def weight_tooltips(at):
    sub, frames = view(at, "attention weights A")
    return tooltip_table(sub["encoding"], frames[sub["data"]["name"]])


def map_table(at, title_prefix):
    """A map's cells with their tooltip lines and highlight columns, as a frame sorted by (i, j)."""
    sub, frames = view(at, title_prefix)
    raw = frames[sub["data"]["name"]].sort_values(["i", "j"]).reset_index(drop=True)
    table = tooltip_table(sub["encoding"], raw)
    return table.assign(**{c: raw[c] for c in ("alpha", "edge") if c in raw})


def as_matrix(column, n):
    return np.asarray(column, dtype=float).reshape(n, n)


@pytest.mark.parametrize("causal", [True, False])
def test_weight_tooltips_show_how_each_weight_was_computed(causal):
    at = run_page(PAGE, causal=str(causal).lower(), seed="7")
    assert not at.exception
    res = expected(6, 7, causal)
    tips = weight_tooltips(at)
    raw = res.Q @ res.K.T
    np.testing.assert_allclose(as_matrix(tips["raw score q_i · k_j"], 6), raw, atol=1e-12)
    np.testing.assert_allclose(as_matrix(tips["scaled score q_i · k_j / √8"], 6), raw / np.sqrt(8), atol=1e-12)
    visible = res.mask.ravel()
    assert tips["mask M_ij"].tolist() == ["0" if v else "−∞" for v in visible]
    exps = np.exp(res.masked_scores)
    np.testing.assert_allclose(as_matrix(tips["exp(scaled + M)"].astype(float), 6), exps, rtol=1e-3)
    np.testing.assert_allclose(as_matrix(tips["row sum of exp"].astype(float), 6),
                               np.repeat(exps.sum(1, keepdims=True), 6, axis=1), rtol=1e-3)
    how = tips["A_ij = exp / row sum"]
    for text, w, seen, i, j in zip(how, res.weights.ravel(), visible, tips["i"], tips["j"], strict=True):
        if seen:
            assert float(text.rsplit("= ", 1)[1]) == pytest.approx(w, abs=1e-4)
        else:  # a masked cell says why it is 0
            assert w == 0.0 and text.startswith("exactly 0")
            assert f"“{LABELS[j]}” comes after “{LABELS[i]}”" in text and "−∞" in text
    assert (~visible).sum() == (15 if causal else 0)



def test_score_and_mask_maps_explain_their_cells_on_hover():
    at = run_page(PAGE)
    res = expected(6, 0, True)
    scores = map_table(at, "scaled scores")
    np.testing.assert_allclose(as_matrix(scores["raw score q_i · k_j"], 6), res.Q @ res.K.T, atol=1e-12)
    assert scores["value"].tolist() == ["−∞" if np.isneginf(v) else f"{v:.2f}" for v in res.masked_scores.ravel()]
    assert scores["mask M_ij"].tolist() == ["0" if v else "−∞" for v in res.mask.ravel()]
    mask = map_table(at, "mask")
    above = (mask["j"] > mask["i"]).to_numpy()
    assert mask["why"][~above].str.startswith("may attend").all()
    assert mask["why"][above].str.contains("not written yet").all()
    # nothing clicked: nothing is faded
    assert "alpha" not in scores and "alpha" not in mask
    assert not any(c.value.startswith(("Highlighted", "Clicked")) for c in at.caption)


def test_clicking_a_weight_highlights_its_query_row_in_the_mask_and_the_scores():
    at = click_cell(run_page(PAGE), CLICK_KEY, 3, 1)
    assert not at.exception
    for title in ("mask", "scaled scores"):
        table = map_table(at, title)
        row = (table["i"] == 3).to_numpy()
        assert (table["alpha"][row] == 1).all() and (table["alpha"][~row] < 0.5).all()
        assert (table["edge"][row] == "black").all() and (table["edge"][~row] == "white").all()
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Highlighted: the row of the query “on”") for c in captions)
    w = expected(6, 0, True).weights[3, 1]
    assert f"Clicked A[on, cat] = {w:.4f}" in " ".join(captions)


def test_clicking_a_masked_weight_says_why_it_is_zero():
    at = click_cell(run_page(PAGE), CLICK_KEY, 1, 4)
    assert not at.exception
    assert any(c.value.startswith("Clicked A[cat, the (4)] = 0.0: “the (4)” comes after “cat”") for c in at.caption)


def test_a_click_remembered_from_a_longer_sentence_is_ignored():
    at = click_cell(run_page(PAGE, seq_len="12"), CLICK_KEY, 11, 10)
    assert any(c.value.startswith("Clicked A[asleep, fast]") for c in at.caption)
    at.slider(key="seq_len").set_value(6).run()
    assert not at.exception
    assert at.session_state[CLICK_KEY]["selection"]["cell"] == [{"i": 11, "j": 10}]  # still remembered
    assert not any(c.value.startswith(("Highlighted", "Clicked")) for c in at.caption)
    assert "alpha" not in map_table(at, "scaled scores")


def test_presenter_mode_keeps_what_each_section_says_the_map_shows():
    """Heading and text are one element (`ui.layout.section`); this page's text stays on the projector."""
    for present in ("false", "true"):
        at = run_page(PAGE, present=present)
        first = next(m.value for m in at.markdown if m.value.startswith("## "))
        assert first.startswith("## 1 · The mask and the scores\n\n") and "The causal mask lets row i see" in first


@pytest.mark.parametrize("seq_len, step", [(6, 4), (12, 12), (6, 1), (9, 5)])
def test_positions_are_counted_from_0_as_in_the_maps_labels(seq_len, step):
    """One convention: the step counts the tokens that exist, and every position the page names is 0-based, as the
    labels of repeated words ('the (4)') and the rows and columns of section 1 are."""
    at = run_page(PAGE, seq_len=str(seq_len), step=str(step))
    assert not at.exception
    words = SENTENCE[:seq_len]
    t = step - 1
    text = "\n".join(el.value for el in [*at.markdown, *at.caption])
    assert f"“{words[t]}”, at position {t}, can see {step} token" in text
    assert f"masked output at position {t} − prefix-only output" in text
    assert all(f"token at position {t} (“{words[t]}”)" in title for title in step_panels(at))
    assert "1 … t" not in text and "1-based" not in text and "columns 0 … i" in text
    labels = [lab for lab in LABELS if "(" in lab]
    assert all(words[int(lab.split("(")[1].rstrip(")"))] == lab.split(" (")[0] for lab in labels)


# ------------------------------------------------------------------- what the shared tests know of this page

def masked_shown(at) -> dict[str, np.ndarray]:
    (row,) = [df["weight"].to_numpy() for title, df in step_panels(at).items() if title.startswith("causal")]
    return {"weights": heatmaps(at)["attention weights A"], "masked row of the step": row}


def masked_page_expected(p) -> dict[str, np.ndarray]:
    shown = expected(p["seq_len"], p["seed"], p["causal"]).weights
    masked = expected(p["seq_len"], p["seed"], True).weights
    return {"weights": shown, "masked row of the step": masked[p["step"] - 1]}


PAGE_TESTS = "tests/pages/test_masked_attention.py::"
SHARED = PageTests(
    probe=Probe(dict(seed=0, seq_len=6, causal=True, step=4), masked_shown, masked_page_expected),
    valid=[Case("masked_attention", {"seed": "99", "seq_len": "9", "causal": "false", "present": "true"},
                {"seed": 99, "seq_len": 9, "causal": False, "present": True})],
    malformed=[
        Case("masked_attention", {"seed": "", "seq_len": "13", "causal": "yes", "step": "9", "present": "maybe"},
             {"seed": 0, "seq_len": 6, "causal": True, "step": 4, "present": False}),
        Case("masked_attention", {"seq_len": "3", "step": "5"}, {"seq_len": 3, "step": 3}, covers=("step",),
             id="masked_attention-step-beyond-the-sentence"),
    ],
    elsewhere={("step", VALID): (PAGE_TESTS + "test_longest_sentence_at_first_and_last_step",)},
    data_step=("seed", (0, 1)),
    canvas=True,
    concept=True,
    quiz=Quiz("masked_zero", "exactly 0"),
    click=lambda at: click_cell(at, CLICK_KEY, 3, 1),
)
