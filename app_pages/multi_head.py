"""Multi-head attention: d_model cut into heads, one attention map per head, concatenated and mixed by W_o."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import merge_heads, multi_head_attention, split_heads
from core.embeddings import embed_tokens, random_projections
from core.multihead_steps import (
    MultiHeadSteps,
    divisors,
    head_focus,
    multi_head_steps,
    nearest_divisor,
    torch_multihead_attention,
    torch_multihead_module,
)
from core.reference import max_abs_diff
from ui.cache import shared_cache
from ui.chart_names import ChartName, heads_name, matrix_name, value_range
from ui.charts import multi_head as charts
from ui.charts.heatmap import unique_labels
from ui.display import clicked_cell, show_chart
from ui.layout import controls_row, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.real_model import PAGE as REAL_MODEL_PAGE
from ui.real_model import page_query, specialised_heads
from ui.take_home import offer_notebook
from ui.url_state import bound_select_slider, bound_slider, seed_slider
from ui.wording.multi_head import cost, equal_rows, trained_heads

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"d_model": "64", "heads": "64", "seq_len": "16"}

#: The sentence the tokens come from; the sequence-length slider keeps its first T words.
SENTENCE = "the cat sat on the mat because it was tired and the dog ran off home"
D_MODELS = [4, 6, 8, 12, 16, 24, 32, 48, 64]
#: Widget key of the clickable attention maps (their selection state, not in the URL).
CLICK_KEY = "heads_cell"
DEFAULT_D_MODEL, DEFAULT_HEADS, DEFAULT_SEQ_LEN = 16, 4, 6  # the lesson's nn.MultiheadAttention(16, 4)


def sentence_and_weights(seed: int, d_model: int,
                         seq_len: int) -> tuple[list[str], np.ndarray, list[np.ndarray]]:
    """The first `seq_len` words, their embeddings X (T, d_model) and W_q, W_k, W_v, W_o."""
    tokens = SENTENCE.split()[:seq_len]
    return tokens, embed_tokens(tokens, d_model, seed), random_projections(d_model, seed, n=4)


@shared_cache(128)
def torch_parity(seed: int, d_model: int, n_heads: int, seq_len: int) -> tuple[float, float]:
    """Max |NumPy - torch.nn.MultiheadAttention (float64)| of the output and of the per-head weights."""
    _, x, w = sentence_and_weights(seed, d_model, seq_len)
    out, attn = multi_head_attention(x, *w, n_heads=n_heads)
    t_out, t_attn = torch_multihead_attention(x, *w, n_heads=n_heads)
    return max_abs_diff(out, t_out), max_abs_diff(attn, t_attn)


@shared_cache(64)
def chart_specs(seed: int, d_model: int, n_heads: int, seq_len: int, cell: tuple[int, ...] | None,
                _steps: MultiHeadSteps, _W_o: np.ndarray) -> dict[str, dict]:
    """The page's charts, built once per input (the cache key); `_steps` and `_W_o` are that input's."""
    return charts.page_specs(_steps, SENTENCE.split()[:seq_len], _W_o, cell)


def dims_of(h: int, d_k: int) -> str:
    """The columns head `h` (1-based) reads, as text."""
    lo, hi = (h - 1) * d_k, h * d_k - 1
    return f"dim {lo}" if lo == hi else f"dims {lo}–{hi}"


introduction(
    "Multi-head attention",
    "One attention head gives every token one way of weighing the others. Multi-head attention runs "
    "several heads in parallel on the *same* tokens: the projected queries, keys and values are cut "
    "into H narrow slices of d_k = d_model / H columns, every slice runs ordinary scaled dot-product "
    "attention on its own, and the H results are glued back together and mixed by one more matrix, W_o. "
    "Same total width and the same projections, but H different attention patterns instead of one.",
    r"\operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\,W_o,\qquad"
    r"\text{head}_h = \operatorname{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h",
)


@page_fragment
def page_body() -> None:
    seed, d_model, n_heads, seq_len = heads_controls()
    offer_notebook("multi_head", seed=seed, d_model=d_model, heads=n_heads, seq_len=seq_len)
    tokens, X, (W_q, W_k, W_v, W_o) = sentence_and_weights(seed, d_model, seq_len)
    steps = multi_head_steps(X, W_q, W_k, W_v, W_o, n_heads)
    input_caption(tokens, seed, d_model, steps)
    clicked = clicked_cell(CLICK_KEY, (n_heads, seq_len, seq_len), fields=("h", "q", "k"))
    specs = chart_specs(seed, d_model, n_heads, seq_len, clicked, steps, W_o)
    project_and_cut_section(steps, specs, clicked, tokens, d_model)
    maps_section(steps, specs, tokens)
    trained_heads_section()
    concat_section(steps, specs, seq_len, d_model)
    torch_section(seed, d_model, n_heads, seq_len)
    width_quiz(d_model, n_heads)
    show_source(multi_head_attention, split_heads, merge_heads, multi_head_steps, torch_multihead_module)


def heads_controls() -> tuple[int, int, int, int]:
    """The seed, d_model, the number of heads (a divisor of d_model) and the number of tokens T."""
    with controls_row():
        seed = seed_slider(lesson_seed=False)
        d_model = int(bound_select_slider(
            "d_model", "d_model", D_MODELS, DEFAULT_D_MODEL,
            help="Width of every token vector, and of Q, K, V and the output.",
        ))
        options = divisors(d_model)
        # The default is a function of d_model alone, so that a link (which leaves out a value equal to the default)
        # reopens the same view. A head count the new d_model does not divide moves to the divisor closest to it
        # (4 heads at d_model=6 -> 3 heads).
        previous = st.session_state.get("heads")
        if isinstance(previous, int) and previous not in options:
            st.session_state["heads"] = nearest_divisor(d_model, previous)
        n_heads = int(bound_select_slider(
            "Heads H", "heads", options, nearest_divisor(d_model, DEFAULT_HEADS),
            help=f"Only divisors of d_model = {d_model} are offered: each head gets d_model / H whole columns.",
        ))
        seq_len = int(bound_slider("Tokens T", "seq_len", 2, 16, DEFAULT_SEQ_LEN,
                                   help="How many words of the sentence are fed in (2 to 16)."))
    return seed, d_model, n_heads, seq_len


def input_caption(tokens: list[str], seed: int, d_model: int, steps: MultiHeadSteps) -> None:
    """What goes in: the words, X's shape, the random weights, and how d_model is cut."""
    seq_len, n_heads, d_k = len(tokens), steps.n_heads, steps.d_k
    st.caption(
        f"Input: “{' '.join(tokens)}”, embedded as X of shape ({seq_len}, {d_model}); "
        f"random W_q, W_k, W_v, W_o of shape ({d_model}, {d_model}) from seed {seed}. "
        f"**{n_heads} head{'s' if n_heads > 1 else ''} × d_k = {d_k} = d_model = {d_model}.**"
    )


def project_and_cut_section(steps: MultiHeadSteps, specs: dict[str, dict], clicked: tuple[int, ...] | None,
                            tokens: list[str], d_model: int) -> None:
    """Section 1: Q, K and V at full width, cut into one block of d_k columns per head."""
    seq_len, n_heads, d_k = len(tokens), steps.n_heads, steps.d_k
    section(
        "1 · Project, then cut into heads",
        "Q, K and V are computed once, full width. Head h then reads only its own block of columns: "
        f"here head 1 sees {dims_of(1, d_k)}, head 2 {dims_of(2, d_k)}, and so on. "
        "Slicing the columns of Q is the same as giving each head its own narrower matrix "
        "W_q^(h), the matching d_k columns of W_q."
        if n_heads > 1 else
        "Q, K and V are computed once, full width. With a single head, that head reads every column: "
        "this is plain scaled dot-product attention. Move the heads slider to cut the columns into blocks.",
        r"\begin{gathered}"
        rf"Q = X W_q,\quad K = X W_k,\quad V = X W_v \quad \in \mathbb{{R}}^{{{seq_len} \times {d_model}}} \\"
        rf"Q_h = Q[:,\ (h-1)\,d_k : h\,d_k] \in \mathbb{{R}}^{{{seq_len} \times {d_k}}},"
        rf"\qquad d_k = {d_model}/{n_heads} = {d_k}"
        r"\end{gathered}",
    )
    qkv = np.stack([steps.q, steps.k, steps.v])  # (3, T, d_model)
    show_chart(specs["qkv"], alt=ChartName(f"Q, K and V, {seq_len} tokens by {n_heads * d_k} columns each, cut into "
                                           f"{n_heads} blocks of {d_k} columns, one per head",
                                           f"Values {value_range(qkv)}."))
    with fixed_slot():
        if clicked is not None:
            h, i, j = clicked
            labels = unique_labels(tokens)
            score = float(steps.scores[h, i, j])
            st.caption(f"Highlighted for the weight you clicked in head {h + 1}: the query of “{labels[i]}” in Q and "
                       f"the key of “{labels[j]}” in K, each only in head {h + 1}'s block ({dims_of(h + 1, d_k)}). "
                       f"Their dot product divided by √{d_k} is the score {score:.3f}, and the weight is "
                       f"{steps.weights[h, i, j]:.3f}. Double-click the maps to clear.")


def maps_section(steps: MultiHeadSteps, specs: dict[str, dict], tokens: list[str]) -> None:
    """Section 2: one attention map per head (clickable), how much the heads differ, and what they cost."""
    labels = unique_labels(tokens)
    seq_len = len(labels)
    n_heads, d_k = steps.n_heads, steps.d_k
    section(
        "2 · One attention map per head",
        "Every head runs the whole attention recipe on its slice: its own scores, its own softmax, its own "
        "map. All maps share one colour scale on [0, 1], so equal colours are equal weights. With random "
        "weights the patterns are arbitrary; below the maps, a trained model's heads that are not.",
        rf"A_h = \operatorname{{softmax}}\!\left(\frac{{Q_h K_h^\top}}{{\sqrt{{{d_k}}}}}\right) "
        rf"\in \mathbb{{R}}^{{{seq_len} \times {seq_len}}},\qquad h = 1, \dots, {n_heads}",
    )
    st.caption("**Click** a weight to highlight, in Q and K above, the two rows of that head's block that produced it, "
               "with their numbers printed.")
    show_chart(specs["maps"], alt=heads_name(f"{n_heads} attention maps, one per head, on a shared 0 to 1 colour scale",
                                             steps.weights, labels),
               on_select="rerun", key=CLICK_KEY, selection_mode="cell")
    focus = head_focus(steps.weights)
    with fixed_slot():
        if n_heads > 1:
            sharp, flat = focus.sharpest, focus.flattest
            st.caption(
                f"Largest difference between two heads' weights for the same pair of tokens: {focus.spread:.3f}. "
                f"Most focused: head {sharp + 1} (a query's top weight averages {focus.peak[sharp]:.3f}); "
                f"least focused: head {flat + 1} ({focus.peak[flat]:.3f}; uniform would be {1 / seq_len:.3f})."
            )
    st.caption(equal_rows(steps, tokens))
    st.caption(cost(seq_len, steps.n_heads * d_k, n_heads))


def trained_heads_section() -> None:
    """The real model's heads that follow a habit, found from its numbers once per process, each with a link that
    opens the real-model page on it."""
    found = specialised_heads()
    lead, lines = trained_heads(found)
    st.markdown(lead)
    for head, line in zip(found, lines, strict=True):
        st.markdown(f"- **{head.habit}**: {line}")
        st.page_link(REAL_MODEL_PAGE, label=f"Layer {head.layer + 1}, head {head.head + 1} up close",
                     query_params=page_query(head), icon=":material/psychology:",
                     help="Opens *A real model's attention* on this head, with the same sentence.")


def concat_section(steps: MultiHeadSteps, specs: dict[str, dict], seq_len: int, d_model: int) -> None:
    """Section 3: the heads' outputs side by side, mixed by W_o."""
    n_heads, d_k = steps.n_heads, steps.d_k
    section(
        "3 · Concatenate, then mix with W_o",
        "Each head returns a d_k-wide blend of its value slice. Putting the H results side by side "
        "rebuilds a d_model-wide matrix, block by block in head order; W_o then mixes the blocks, so "
        "every output dimension can draw on every head.",
        rf"\text{{head}}_h = A_h V_h \in \mathbb{{R}}^{{{seq_len} \times {d_k}}},\qquad "
        rf"\text{{output}} = \underbrace{{[\,\text{{head}}_1 \;\cdots\; \text{{head}}_{{{n_heads}}}\,]}}"
        rf"_{{{seq_len} \times {d_model}}}\; \underbrace{{W_o}}_{{{d_model} \times {d_model}}}",
    )
    show_chart(specs["concat"], alt=matrix_name(f"The concatenated head outputs, one block of {d_k} columns per head",
                                                steps.concat, "tokens", "columns"))
    output = matrix_name(f"Heatmaps of W_o, {d_model} by {d_model}, and of the output", steps.output, "tokens",
                         "columns")
    show_chart(specs["mix"], alt=ChartName(output.alt, f"Output values {value_range(steps.output)}."))
    st.caption(f"The output has the input's shape, ({seq_len}, {d_model}): attention maps a sequence to a sequence.")


def torch_section(seed: int, d_model: int, n_heads: int, seq_len: int) -> None:
    """The same numbers through torch.nn.MultiheadAttention."""
    section(
        "Cross-check with torch.nn.MultiheadAttention",
        f"The same X and weights through `torch.nn.MultiheadAttention({d_model}, {n_heads}, bias=False, "
        "batch_first=True)`, run in **float64**. PyTorch stores weights the `nn.Linear` way (it computes "
        "x Wᵀ), so it gets the transposes: `in_proj_weight` = [W_qᵀ; W_kᵀ; W_vᵀ] stacked, "
        "`out_proj.weight` = W_oᵀ. With `need_weights=True, average_attn_weights=False` it also returns "
        "the per-head maps. Both sides are float64, so any difference is rounding (about 1e-15).",
    )
    out_diff, w_diff = torch_parity(seed, d_model, n_heads, seq_len)
    with st.container(horizontal=True):
        st.metric("max |NumPy − PyTorch|, output", f"{out_diff:.1e}")
        st.metric("max |NumPy − PyTorch|, per-head weights", f"{w_diff:.1e}")


def width_quiz(d_model: int, n_heads: int) -> None:
    """What doubling the heads does to d_k."""
    heads_quiz = {"it halves": 0.5, "it doubles": 2.0, "it stays the same": 1.0}
    ratio = (d_model / (2 * n_heads)) / (d_model / n_heads)  # d_k with twice the heads, over d_k now
    predict_then_reveal(
        f"Keep d_model = {d_model} and double the number of heads. What happens to each head's width d_k?",
        list(heads_quiz), next(k for k, v in heads_quiz.items() if np.isclose(v, ratio)),
        f"d_k = d_model / n_heads: {d_model} / {n_heads} = {d_model / n_heads:g} now, {d_model} / {2 * n_heads} = "
        f"{d_model / (2 * n_heads):g} with twice the heads. More heads are narrower; the total width stays d_model.",
        key="multi_head_width",
    )


page_body()
