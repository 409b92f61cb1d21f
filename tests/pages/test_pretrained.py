"""AppTests of app_pages/pretrained.py: the model's maps on the page, the cross-check, text limits, slider extremes."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from pretrained.model import load_model, run_model
from pretrained.patterns import pattern_scores, strongest_heads
from tests.helpers.apptest import APP, chart_specs, heatmaps
from tests.helpers.exports import open_export_menus, page_matrices
from tests.helpers.registry import Case, PageTests, Probe

PAGE = "app_pages/pretrained.py"
DEFAULT_TEXT = "The cat sat on the mat because it was tired."
LONGEST = "a " * 30  # 30 word-pieces + [CLS] + [SEP] = the page's limit of 32
TOO_LONG = "a " * 31


@pytest.fixture(scope="module")
def model():
    return load_model()


def run(**query) -> AppTest:
    """Like `tests.helpers.apptest.run_page`, with room for the first load of the model (seconds on a busy machine)."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.switch_page(PAGE)
    at.query_params.update({k: str(v) for k, v in query.items()})
    return at.run()


def grid_rows(at):
    for _, frames in chart_specs(at):
        if "attention_grid" in frames:
            return frames["attention_grid"]
    raise AssertionError("no attention grid on the page")


def metrics(at) -> list[float]:
    return [float(m.value) for m in at.metric]


def test_defaults_show_the_models_own_weights(model):
    at = run()
    assert not at.exception and not at.error
    expected = run_model(DEFAULT_TEXT, model)
    t = len(expected.tokens)
    shown = " ".join(m.value for m in at.markdown)
    assert f"The {t} tokens the model sees" in shown and "`[CLS]`" in shown and "`[SEP]`" in shown
    grid = grid_rows(at)
    assert len(grid) == 6 * 12 * t * t
    cell = grid[(grid["layer"] == 2) & (grid["head"] == 5)].sort_values(["i", "j"])["weight"]
    np.testing.assert_allclose(cell.to_numpy().reshape(t, t), expected.weights[1, 4], atol=1e-6)
    np.testing.assert_allclose(heatmaps(at)["layer 1, head 1"], expected.weights[0, 0], atol=1e-12)
    head_diff, layer_diff = metrics(at)
    assert 0 <= head_diff <= layer_diff < 1e-5  # the lesson's formula reproduces the encoder's maps
    assert at.slider(key="layer").value == 1 and at.slider(key="head").value == 1
    captions = " ".join(c.value for c in at.caption)
    # The cross-check says what it compares, and where the comparison with transformers is made.
    assert "same X, W_q and W_k" in captions and "test suite against Hugging Face `transformers`" in captions
    assert "`pretrained.minilm`" in captions


def test_every_chart_is_exported_and_the_close_up_exports_its_matrix(model):
    at = run()
    open_export_menus(at)
    menus = [s for s in at.selectbox if s.key.startswith("export_")]
    # The close-up reruns alone (a fragment of its own), so it has its own menu; the page's has the other two.
    assert len(menus) == 2 and len(at.get("vega_lite_chart")) == 3
    options = [o for m in menus for o in m.options]
    assert len([o for o in options if o.endswith(" · PNG image")]) == 3
    assert len([o for o in options if o.endswith(" · SVG drawing")]) == 3
    assert any("layer 1, head 1 · CSV" in m.options for m in menus)
    # The grid and the averaged view export their maps too, as the model computed them.
    assert any("layer 2, head 5 (grid) · CSV" in m.options for m in menus)
    assert any("all 72 heads · LaTeX bmatrix" in m.options for m in menus)
    expected = run_model(DEFAULT_TEXT, model)
    matrices = page_matrices(at)
    np.testing.assert_allclose(matrices["layer 2, head 5 (grid)"][0], expected.weights[1, 4], atol=1e-6)
    np.testing.assert_allclose(matrices["all 72 heads"][0], expected.weights.mean(axis=(0, 1)), atol=1e-12)
    assert matrices["all 72 heads"][1] == matrices["layer 1, head 1"][1]  # the same token labels


def test_the_page_never_imports_transformers():
    """The page runs the model with `pretrained.minilm`: transformers (hundreds of MB with scipy) stays out."""
    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({APP!r}, default_timeout=600)\n"
        f"at.switch_page({PAGE!r})\n"
        "at.run()\n"
        "assert not at.exception and not at.error and len(at.metric) == 2, 'the page did not run'\n"
        "print([m for m in ('transformers', 'huggingface_hub', 'sentence_transformers', 'scipy') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(APP).parent, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", f"imported: {done.stdout}"


def test_slider_maxima_and_a_pattern_button(model):
    at = run(layer=6, head=12)
    assert not at.exception
    expected = run_model(DEFAULT_TEXT, model)
    np.testing.assert_allclose(heatmaps(at)["layer 6, head 12"], expected.weights[5, 11], atol=1e-12)
    assert max(metrics(at)) < 1e-5
    best = {name: (layer, head) for name, layer, head, _, _ in strongest_heads(pattern_scores(expected))}
    at.button(key="show_previous token").click().run()
    layer, head = best["previous token"]
    assert (at.slider(key="layer").value, at.slider(key="head").value) == (layer + 1, head + 1)
    assert f"layer {layer + 1}, head {head + 1}" in heatmaps(at)


def test_longest_text_is_drawn_and_longer_is_refused():
    at = run(text=LONGEST)
    assert not at.exception and not at.error
    assert len(grid_rows(at)) == 6 * 12 * 32 * 32
    at.text_input(key="text").set_value(TOO_LONG).run()
    assert not at.exception
    assert "33 WordPiece tokens" in at.error[0].value and "at most 32" in at.error[0].value
    assert len(grid_rows(at)) == 6 * 12 * 32 * 32  # the last valid text stays on screen


def test_empty_text_and_malformed_url_values_fall_back():
    at = run(layer="abc", head="99")
    assert not at.exception
    assert at.slider(key="layer").value == 1 and at.slider(key="head").value == 1
    at.text_input(key="text").set_value("   ").run()
    assert not at.exception
    assert "no token the model can read" in at.error[0].value
    assert "layer 1, head 1" in heatmaps(at) and len(grid_rows(at)) == 6 * 12 * 13 * 13


@pytest.mark.parametrize("text", [DEFAULT_TEXT, "Tokenization splits unbelievable words into pieces.",
                                  "the dog the dog the dog"])
def test_every_habit_and_the_layers_trend_are_described_by_their_numbers(model, text):
    """A head is said to do something "mostly" only when half a token's attention or more goes there, to do it at all
    only from twice an even spread; the averaged view's trend is the layers' measured shares, whatever the text."""
    import re

    at = run(text=text)
    assert not at.exception
    expected = run_model(text, model)
    assert not any("Everything so far used" in m.value for m in at.markdown)  # the training page came before
    lines = {m.value.split("**")[1]: m.value for m in at.markdown if m.value.startswith("**") and " — " in m.value}
    for name, layer, head, score, baseline in strongest_heads(pattern_scores(expected)):
        line = lines[name]
        assert f"layer {layer + 1}, head {head + 1}" in line and f"{score:.2f}" in line and f"{baseline:.2f}" in line
        assert ("most of a token's attention goes" in line) == (score >= 0.5 and score >= 2 * baseline)
        assert ("No head does this clearly" in line) == (score < 2 * baseline)
        assert "mostly stays" not in line and "parks its attention" not in line
    t = len(expected.tokens)
    per_layer = expected.weights.mean(axis=1)  # (L, T, T)
    near = np.abs(np.subtract.outer(np.arange(t), np.arange(t))) <= 1
    local = [float((m * near).sum(axis=1).mean()) for m in per_layer]
    special = [float(m[:, [0, t - 1]].sum(axis=1).mean()) for m in per_layer]
    text_4 = next(m.value for m in at.markdown if m.value.startswith("## 4 · Averaged view"))
    found = re.search(r"diagonal \(a token, its neighbours\) (rises|falls) from ([\d.]+) in layer 1 to ([\d.]+) in "
                      r"layer 6; the attention on `\[CLS\]` and `\[SEP\]` (rises|falls) from ([\d.]+) in layer 1 to "
                      r"(\d+\.\d+) in layer 6", text_4)
    assert found, text_4
    assert found[1] == ("rises" if local[-1] > local[0] else "falls")
    assert found[4] == ("rises" if special[-1] > special[0] else "falls")
    np.testing.assert_allclose([float(found[i]) for i in (2, 3, 5, 6)], [local[0], local[-1], special[0], special[-1]],
                               atol=5e-3)


# ------------------------------------------------------------------- what the shared tests know of this page

#: The WordPiece tokens of the texts used below (all-MiniLM-L6-v2 lower-cases; "." is a token of its own).
WORDPIECES = {
    DEFAULT_TEXT: ("[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", ".", "[SEP]"),
    "The dog ran home": ("[CLS]", "the", "dog", "ran", "home", "[SEP]"),
}


def pretrained_shown(at: AppTest) -> dict:
    chips = next(m.value for m in at.markdown if re.match(r"\*\*The \d+ tokens", m.value))
    (title,) = [t for t in heatmaps(at) if re.fullmatch(r"layer \d+, head \d+", t)]
    layer, head = map(int, re.findall(r"\d+", title))
    grid = grid_rows(at)
    cell = grid[(grid["layer"] == layer) & (grid["head"] == head)].sort_values(["i", "j"])["weight"].to_numpy()
    close_up = heatmaps(at)[title]
    return {"tokens": tuple(re.findall(r"`([^`]+)`", chips.split(":", 1)[1])), "close-up": title,
            "close-up is that head of the grid": bool(np.allclose(close_up.ravel(), cell, atol=1e-6))}


def pretrained_expected(p) -> dict:
    return {"tokens": WORDPIECES[p["text"]], "close-up": f"layer {p['layer']}, head {p['head']}",
            "close-up is that head of the grid": True}


MODEL_LOAD = 600  # seconds: the page loads its model on the first visit (slow on a busy machine)
SHARED = PageTests(
    probe=Probe(dict(text=DEFAULT_TEXT, layer=1, head=1), pretrained_shown, pretrained_expected),
    valid=[Case("pretrained", {"text": "The dog ran home", "layer": "3", "head": "7", "present": "true"},
                {"text": "The dog ran home", "layer": 3, "head": 7, "present": True}, timeout=MODEL_LOAD)],
    # max_chars=200: Streamlit cuts the text to 200 characters (the notice), still too many tokens (the error)
    malformed=[Case("pretrained", {"text": "a " * 2000, "layer": "7", "head": "0", "present": "maybe"},
                    {"text": "a " * 100, "layer": 1, "head": 1, "present": False}, uses={"text": DEFAULT_TEXT},
                    error="this page draws at most 32", timeout=MODEL_LOAD)],
    data_step=("layer", (1, 2)),
)
