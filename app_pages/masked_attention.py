"""Masked self-attention (the decoder): no token may look at the tokens after it."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import causal_mask, reference, scaled_dot_product_attention
from core.masking import (
    MaskedAttention,
    future_weight,
    masked_self_attention,
    max_above_diagonal,
    prefix_attention,
    renormalise_visible,
    sentence_self_attention,
)
from core.reference import max_abs_diff
from ui.cache import shared_cache
from ui.chart_names import ChartName, largest_weight, value_range, weights_name
from ui.charts import masked_attention as charts
from ui.charts.heatmap import unique_labels
from ui.display import clicked_cell, show_chart
from ui.layout import controls_row, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_slider, bound_toggle, seed_slider

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"seq_len": "12"}

SENTENCE = "the cat sat on the mat and then it fell fast asleep".split()
D_MODEL = 8  # d_model = d_k = d_v: one head, small enough to read
MAX_T = len(SENTENCE)
#: Widget key of the clickable weights map (its selection state, not in the URL).
CLICK_KEY = "masked_cell"


def fmt_weight(x: float) -> str:
    """Exact zero reads 0.0; anything else gets four decimals."""
    return "0.0" if x == 0.0 else f"{x:.4f}"


@shared_cache(256)
def attention_at(seed: int, seq_len: int, causal: bool) -> MaskedAttention:
    """The first `seq_len` words of the sentence through one head, computed once per input."""
    return sentence_self_attention(SENTENCE[:seq_len], D_MODEL, seed, causal=causal)


@shared_cache(256)
def torch_difference(seed: int, seq_len: int, causal: bool, _attention: MaskedAttention) -> float:
    """max |NumPy − PyTorch| of the output, computed once per input; `_attention` is that input's result."""
    a = _attention
    return reference.torch_difference(a.output, a.Q, a.K, a.V, is_causal=causal)


@shared_cache(256)
def map_specs(seed: int, seq_len: int, causal: bool, cell: tuple[int, int] | None,
              _attention: MaskedAttention) -> dict[str, dict]:
    """The mask, score and weight maps, built once per input (the cache key); `_attention` is its result."""
    return charts.page_specs(_attention, unique_labels(SENTENCE[:seq_len]), cell)


@shared_cache(256)
def step_spec(seed: int, seq_len: int, step: int, _unmasked: MaskedAttention, _masked: MaskedAttention) -> dict:
    """Token `step`'s weights without and with the causal mask, built once per input (the cache key)."""
    return charts.step_spec(_unmasked, _masked, unique_labels(SENTENCE[:seq_len]), SENTENCE, step)


introduction(
    "Masked self-attention (the decoder)",
    "A decoder writes its output one token at a time, so while it produces token t the tokens after t "
    "do not exist yet. Training runs on whole sentences at once, so the future *is* there, and it must "
    "be hidden: before the softmax, every score of a key that lies ahead of the query is replaced by −∞. "
    "Its weight becomes e^(−∞) = 0 and the remaining weights are renormalised over the visible prefix.",
    r"\operatorname{MaskedAttention}(Q,K,V) = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,"
    r"\qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}",
    keep_text=True,
)


@page_fragment
def generation_step(seed: int, seq_len: int, causal: bool) -> None:
    """Section 3's body: one generation step, a fragment nested in the page's.

    Its step slider changes nothing else on the page, so a step reruns only this part.
    """
    tokens = SENTENCE[:seq_len]
    if seq_len > 1:
        step = int(bound_slider("Generation step s", "step", 1, seq_len, min(4, seq_len),
                                help="At step s, s tokens exist, at positions 0 … s − 1; the newest, at position "
                                     "t = s − 1, attends to them. The tokens after it do not exist yet."))
    else:
        step = 1
        st.caption("One token: the only step is s = 1, the token at position 0.")
    t = step - 1
    seen = " ".join(tokens[:step])
    unseen = " ".join(tokens[step:])
    st.markdown(f"Step {step}: **{seen}**" + (f" :gray[{unseen}]" if unseen else "")
                + f" — “{tokens[t]}”, at position {t}, can see {step} token{'s' if step > 1 else ''}"
                + (f", positions 0 … {t}." if t else ", itself."))

    full, masked = (attention_at(seed, seq_len, causal=c) for c in (False, True))  # this step needs both
    prefix_w, prefix_out = prefix_attention(masked.Q, masked.K, masked.V, step)
    show_chart(step_spec(seed, seq_len, step, full, masked),
               alt=ChartName(f"Bar charts of one token's attention weights over {seq_len} keys, without and with "
                             "the causal mask",
                             f"Without the mask, largest weight "
                             f"{largest_weight(full.weights[t:t + 1], tokens[t:t + 1], tokens)}; with it, "
                             f"{largest_weight(masked.weights[t:t + 1], tokens[t:t + 1], tokens)}."))
    visible_share = float(full.weights[t, :step].sum())
    c1, c2, c3 = st.columns(3)
    c1.metric("weight the visible keys had without the mask", f"{visible_share:.4f}",
              help="Dividing the visible weights by this number gives the masked row.")
    c2.metric("max |masked row − renormalised unmasked row|",
              f"{max_abs_diff(masked.weights[t], renormalise_visible(full.weights[t], step)):.1e}")
    c3.metric("max |masked row − softmax over the prefix only|",
              f"{max_abs_diff(masked.weights[t, :step], prefix_w):.1e}",
              help="The prefix softmax never sees the later tokens at all; the mask gives the same weights. "
                   "So training on the whole masked sentence matches generating token by token.")
    st.caption(f"The outputs agree too: max |masked output at position {t} − prefix-only output| = "
               f"{max_abs_diff(masked.output[t], prefix_out):.1e}.")


@page_fragment
def page_body() -> None:
    seed, seq_len, causal = mask_controls()
    tokens = SENTENCE[:seq_len]
    labels = unique_labels(tokens)
    attention = attention_at(seed, seq_len, causal)
    clicked = clicked_cell(CLICK_KEY, (seq_len, seq_len))
    specs = map_specs(seed, seq_len, causal, clicked, attention)
    st.caption(f"Tokens: “{' '.join(tokens)}”. Each is a random {D_MODEL}-dimensional embedding plus its positional "
               f"encoding; W_q, W_k, W_v are random {D_MODEL} × {D_MODEL} matrices (seed {seed}), so d_k = {D_MODEL}.")
    mask_and_scores_section(attention, specs, clicked, labels, causal)
    weights_section(attention, specs, clicked, labels, causal)
    generation_section(seed, seq_len, causal)
    offer_notebook("masked_attention", seed=seed, seq_len=seq_len, causal=causal,
                   step=st.session_state.get("step", min(4, seq_len)) if seq_len > 1 else 1)
    torch_section(seed, seq_len, causal, attention)
    first_to_last_quiz(seed, seq_len, causal, attention, labels)
    show_source(causal_mask, masked_self_attention, scaled_dot_product_attention, prefix_attention,
                sentence_self_attention)


def mask_controls() -> tuple[int, int, bool]:
    """The seed, the number of tokens T, and whether the causal mask is on."""
    with controls_row():
        seed = seed_slider(lesson_seed=False)
        seq_len = int(bound_slider("Tokens T", "seq_len", 1, MAX_T, 6,
                                   help=f"How many words of the sentence to use, 1 to {MAX_T}."))
        causal = bound_toggle("Causal mask", "causal", True,
                              help="On: the decoder's masked self-attention. Off: the encoder's, where every token "
                                   "sees every other token.")
    return seed, seq_len, causal


def mask_and_scores_section(attention: MaskedAttention, specs: dict[str, dict], clicked: tuple[int, int] | None,
                            labels: list[str], causal: bool) -> None:
    """Section 1: the causal mask and the scaled scores it hides."""
    section(
        "1 · The mask and the scores",
        "Row i is the query of token i, column j the key of token j. The causal mask lets row i see columns "
        "0 … i: the diagonal and everything below it. Above the diagonal, the scaled score is replaced by −∞ "
        "(grey cells: a colour scale cannot show −∞)."
        if causal else
        "The mask is switched off: every cell may attend, as in the encoder. Every score goes to the softmax.",
        keep_text=True,
    )
    hidden = int((~attention.mask).sum())
    n = attention.mask.shape[0]
    show_chart(specs["maps"],
               alt=ChartName(f"Heatmaps of the mask and of the masked scaled scores, {n} queries by {n} keys",
                             f"The mask hides {hidden} of {attention.mask.size} cells"
                             + (", whose scores are minus infinity" if hidden else "")
                             + f". Finite scores {value_range(attention.masked_scores)}."))
    with fixed_slot():
        if clicked is not None:
            q, k = clicked
            st.caption(f"Highlighted: the row of the query “{labels[q]}”, whose scores the softmax turned into the "
                       f"weights A[{labels[q]}, ·] (you clicked A[{labels[q]}, {labels[k]}]). "
                       "Double-click the weights to clear.")


def weights_section(attention: MaskedAttention, specs: dict[str, dict], clicked: tuple[int, int] | None,
                    labels: list[str], causal: bool) -> None:
    """Section 2: the weights (clickable), exact zeros above the diagonal when masked."""
    section(
        "2 · The weights",
        "After the softmax every row still sums to 1, but the cells above the diagonal are exactly zero, "
        "not merely small: no token can take information from a later one."
        if causal else
        "Without the mask, the weights above the diagonal are ordinary positive numbers: each token draws "
        "part of its output from words that come after it, which a decoder generating text could never see.",
        keep_text=True,
    )
    st.caption("Hover a weight to see how it was computed; **click** it to highlight its query's row in the mask "
               "and the scores above.")
    left, right = st.columns([3, 1], vertical_alignment="center")
    with left:
        show_chart(specs["weights"], alt=weights_name("Heatmap of the attention weights", attention.weights, labels),
                   on_select="rerun", key=CLICK_KEY, selection_mode="cell")
        if clicked is not None:
            q, k = clicked
            why = (f"“{labels[k]}” comes after “{labels[q]}”: its score is −∞, so the weight is exactly 0"
                   if not attention.mask[q, k] else f"its share of e^(score) in row “{labels[q]}”")
            st.caption(f"Clicked A[{labels[q]}, {labels[k]}] = {fmt_weight(float(attention.weights[q, k]))}: {why}.")
    above = max_above_diagonal(attention.weights)
    right.metric("max weight above the diagonal", fmt_weight(above),
                 help="Largest A[i, j] with j > i: the most any token attends to a later token.")
    right.metric("max |row sum − 1|", f"{np.abs(attention.weights.sum(axis=1) - 1).max():.1e}")
    right.metric("total weight on future tokens", fmt_weight(future_weight(attention.weights)),
                 help="Sum of every weight above the diagonal, over all rows.")


def generation_section(seed: int, seq_len: int, causal: bool) -> None:
    """Section 3: one generation step, drawn by its own nested fragment."""
    section(
        "3 · One generation step",
        "Pick a step s. At that moment only the tokens at positions 0 … t exist (t = s − 1, counted from 0 as "
        "everywhere in the app), and the newest one's query, at position t, is compared with their keys alone. "
        "Left: its weights without the mask, spread over the whole sentence "
        "(orange: weight on words that have not been written yet). Right: the masked row. The visible "
        "bars keep their proportions, only rescaled to sum to 1.",
        r"A^{\text{mask}}_{tj} = \frac{A_{tj}}{\sum_{j' \le t} A_{tj'}}\ (j \le t),\qquad "
        r"A^{\text{mask}}_{tj} = 0\ (j > t)",
        keep_text=True,
    )
    generation_step(seed, seq_len, causal)


def torch_section(seed: int, seq_len: int, causal: bool, attention: MaskedAttention) -> None:
    """The output against PyTorch's, which builds its own causal mask."""
    section(
        "Cross-check with PyTorch",
        "The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention` with "
        f"`is_causal={causal}`: PyTorch builds its own mask from that flag. NumPy runs in float64, so they "
        "agree to float32 precision.",
        keep_text=True,
    )
    st.metric(f"max |NumPy − PyTorch| of the output (is_causal={causal})",
              f"{torch_difference(seed, seq_len, causal, attention):.2e}")


def first_to_last_quiz(seed: int, seq_len: int, causal: bool, attention: MaskedAttention, labels: list[str]) -> None:
    """How much weight the first token can give to the last one under the mask (two tokens or more)."""
    with fixed_slot():
        if seq_len >= 2:
            full = attention if not causal else attention_at(seed, seq_len, causal=False)
            masked = attention if causal else attention_at(seed, seq_len, causal=True)
            masked_first_last = float(masked.weights[0, -1])
            predict_then_reveal(
                f"With the causal mask, how much weight can the first token “{labels[0]}” give to the last token "
                f"“{labels[-1]}”?", ["exactly 0", "a small positive amount", "as much as without the mask"],
                "exactly 0" if masked_first_last == 0.0 else "a small positive amount",
                f"It is {masked_first_last!r}: the masked score is −∞ before the softmax and e^(−∞) = 0 exactly. "
                f"Without the mask it would be {float(full.weights[0, -1]):.3f}.",
                key="masked_zero",
            )


page_body()
