"""Worked example: the lesson's three tokens through one attention head, every matrix shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import LESSON_TOKENS, LESSON_X, WorkedExample, scaled_dot_product_attention, softmax, worked_example
from core.designed_weights import PRESETS, Preset, designed_example
from core.user_input import format_matrix, parse_matrix, validate_input
from ui.cache import shared_cache
from ui.chart_names import ChartName, matrix_name, together, value_range, weights_name
from ui.charts import worked_example as charts
from ui.charts.heatmap import unique_labels
from ui.display import clicked_cell, show_chart
from ui.layout import controls_row, explain, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_choice, bound_stepper, seed_slider
from ui.wording.worked_example import how_the_weights_are_made, what_each_query_asks

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"seed": "99"}

STAGES = ["X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output"]
#: The weight matrices on offer: the lesson's random ones, or a preset designed so that each query asks for something.
WEIGHTS = ["random", *PRESETS]
#: Session-state keys of this page (not in the URL): whether the own-input and value-vector expanders are open,
#: the editor's widget state and the input it last accepted.
OWN_INPUT_OPEN, VALUE_VECTORS_OPEN, EDITOR, LAST_VALID = "own_input", "v_rows", "x_editor", "_worked_last_valid"
#: Session-state key of the (tokens, X) the editable table was built from.
TABLE_SOURCE = "_worked_table_source"
#: Session-state key of why the table's last edit was refused (absent when it was accepted).
REJECTED_EDIT = "_worked_rejected_edit"


def url_input() -> tuple[tuple[str, ...], np.ndarray]:
    """Tokens and X from the link (``?tokens=a b c&X=1,0;0,1;...``), or the lesson's when absent or invalid."""
    if "tokens" not in st.query_params and "X" not in st.query_params:
        return LESSON_TOKENS, LESSON_X
    try:
        tokens = st.query_params.get("tokens", " ".join(LESSON_TOKENS)).split()
        return validate_input(tokens, parse_matrix(st.query_params.get("X", format_matrix(LESSON_X))))
    except ValueError as err:
        st.error(f"The link's own input could not be used: {err} Showing the lesson's example instead.",
                 icon=":material/link_off:")
        return LESSON_TOKENS, LESSON_X


def own_input() -> tuple[tuple[str, ...], np.ndarray]:
    """An editable table of tokens and embeddings; a bad edit shows why and keeps the last valid input.

    The table is built from the link once and then kept while the student edits it. This function rewrites
    the link after every accepted edit; rebuilding the table from that link on the next run would hand
    `st.data_editor` new data, hence a new widget identity, and the edit typed next would be silently
    dropped. So the table is rebuilt only when the link holds something other than the input last accepted
    here: on the first run, or after "Back to the lesson's example".

    The table is only sent while its expander is open (it opens by itself for a link with its own input).
    Closed, it would still make the browser load and draw the data editor on every first visit, a large
    share of the landing page's cold start. Closing it keeps the last valid input (the link
    holds it) and forgets the editor's state, so reopening builds the table from that input.
    """
    url_tokens, url_X = url_input()
    st.session_state.pop(REJECTED_EDIT, None)
    last = st.session_state.get(LAST_VALID)
    source = st.session_state.get(TABLE_SOURCE)
    if source is None or last is None or last[0] != url_tokens or not np.array_equal(last[1], url_X):
        source = st.session_state[TABLE_SOURCE] = (url_tokens, url_X)
    base_tokens, base_X = source
    if OWN_INPUT_OPEN not in st.session_state:
        # Opened by itself for a link with its own input, then the student's choice
        # (not `expanded=`: a parameter that changed after the first edit would make it a new widget, always open)
        current_tokens, current_X = st.session_state.get(LAST_VALID, (base_tokens, base_X))
        st.session_state[OWN_INPUT_OPEN] = current_tokens != LESSON_TOKENS or not np.array_equal(current_X, LESSON_X)
    expander = st.expander("Use your own tokens and embeddings", icon=":material/edit:", key=OWN_INPUT_OPEN,
                           on_change="rerun")
    if not expander.open:  # the link holds the last valid input; reopening builds the table from it
        st.session_state.pop(EDITOR, None)
        st.session_state[TABLE_SOURCE] = st.session_state[LAST_VALID] = (url_tokens, url_X)
        return url_tokens, url_X
    with expander:
        tokens, X, valid = edited_input(base_tokens, base_X)
    if valid:
        accept_input(tokens, X)
    return tokens, X


def edited_input(base_tokens: tuple[str, ...], base_X: np.ndarray) -> tuple[tuple[str, ...], np.ndarray, bool]:
    """The table of tokens and embeddings, with its way back to the lesson's example; returns the edited input and
    True, or, for an edit that is not a valid input, the last valid input and False (the reason shown)."""
    explain("Edit any cell, add or delete rows (one per token, at most 8) or type new labels. "
            "Everything below is recomputed from your input.")
    # The numbers are edited as text. Glide's number editor would turn typed letters, "nan" or "inf" into
    # 0 without a word; as text they reach `validate_input`, which names the cell and what is wrong.
    dims = [f"d{j}" for j in range(base_X.shape[1])]
    table = pd.DataFrame([format_matrix(row[None]).split(",") for row in base_X], columns=dims)
    table.insert(0, "token", list(base_tokens))
    number = "A number, e.g. 0.5 or -2"
    edited = st.data_editor(
        table, key=EDITOR, num_rows="dynamic", hide_index=True,
        column_config={"token": st.column_config.TextColumn("token", help="One word per token", required=True),
                       **{d: st.column_config.TextColumn(d, help=number) for d in dims}},
    )
    if st.button("Back to the lesson's example", icon=":material/restart_alt:"):
        for key in (EDITOR, LAST_VALID, TABLE_SOURCE):
            st.session_state.pop(key, None)
        for key in ("tokens", "X"):
            st.query_params.pop(key, None)
        st.rerun()
    try:
        tokens, X = validate_input(edited["token"].tolist(), edited[dims].astype(object).values.tolist())
    except ValueError as err:
        st.session_state[REJECTED_EDIT] = str(err)
        tokens, X = st.session_state.get(LAST_VALID, (base_tokens, base_X))
        st.error(f"{err} Showing the last valid input until this is fixed.", icon=":material/error:")
        return tokens, X, False
    return tokens, X, True


def accept_input(tokens: tuple[str, ...], X: np.ndarray) -> None:
    """Remember a valid input, and put it in the link (none for the lesson's own example)."""
    st.session_state[LAST_VALID] = (tokens, X)
    if tokens == LESSON_TOKENS and np.array_equal(X, LESSON_X):
        st.query_params.pop("tokens", None)
        st.query_params.pop("X", None)
    else:  # the link reproduces the student's own example
        st.query_params["tokens"] = " ".join(tokens)
        st.query_params["X"] = format_matrix(X)


@shared_cache(512)
def chart_spec(name: str, weights: str, tokens: tuple[str, ...], X: np.ndarray, cell: tuple[int, int] | None,
               _ex: WorkedExample) -> dict:
    """One of the page's charts, built once per input (the cache key: `weights` names the weight matrices, "seed 3"
    or a preset's name); `_ex` is that input's worked example.

    One chart per call, so each is sent as soon as it is built (the browser draws the first while the next is
    built) and a clicked cell, which only highlights Q and K, rebuilds the projections alone.
    """
    return charts.chart_spec(name, _ex, cell)


def stage_chart(name: str, ex: WorkedExample, weights: str, cell: tuple[int, int] | None = None) -> dict:
    """The chart of stage `name` for this worked example; `cell`, the clicked weight, is shown by the projections."""
    return chart_spec(name, weights, ex.tokens, ex.X, cell, ex)


def fmt_vec(v: np.ndarray) -> str:
    return r"\begin{bmatrix}" + " & ".join(f"{x:.3f}" for x in v) + r"\end{bmatrix}"


@page_fragment
def explain_output(ex: WorkedExample, labels: list[str]) -> None:
    """One token's output as a weighted sum of the values: a fragment nested in the page's.

    Its token choice and the value-vector expander change nothing else, so they rerun only this part.
    """
    n_tokens = len(labels)
    token = bound_choice("Explain the output of token", "token", labels, default=labels[0],
                         help="Shows this token's output as the weighted sum of the value vectors.")
    i = labels.index(token)
    terms = " + ".join(f"{ex.weights[i, j]:.3f}\\,v_{{{j + 1}}}" for j in range(n_tokens))
    st.latex(rf"\text{{output}}_{{\text{{{ex.tokens[i]}}}}} = {terms} = {fmt_vec(ex.output[i])}")
    values = st.expander("The value vectors v₁ … v_T", key=VALUE_VECTORS_OPEN, on_change="rerun")
    if values.open:  # sent only when open: closed, the browser would typeset it again on every step
        rows = r"\\".join(rf"v_{{{j + 1}}} = {fmt_vec(ex.V[j])}\ \ (\text{{{t}}})" for j, t in enumerate(ex.tokens))
        values.latex(r"\begin{gathered}" + rows + r"\end{gathered}")


introduction(
    "Worked example: one head, by hand",
    "Tokens, each already an embedding vector, go through one attention head. Every matrix below is "
    "computed live by `core.worked_example`: move the seed to draw other weight matrices, choose the designed "
    "ones to see queries that ask for something you can name, or step through the stages one at a time. The idea behind it, attention as a soft dictionary lookup, is the next "
    "page's.",
)


@page_fragment
def page_body() -> None:
    with controls_row():
        preset = PRESETS.get(bound_choice(
            "Weights W_q, W_k, W_v", "weights", WEIGHTS, default="random",
            help="Random: the lesson's recipe, drawn from the seed. Designed: made by hand so that each query asks "
                 "for a kind of word you can name (a pronoun for its noun). Previous word: made by hand so that each "
                 "word asks for the word just before it."))
        seed = 0 if preset else seed_slider()
    stage = STAGES.index(bound_stepper("Reveal up to", "reveal", STAGES, STAGES[-1],
                                       help="Show the computation one stage at a time; the stage is part of the link."))
    if preset:  # the notebook writes the preset's matrices as data
        ex, weights = designed_example(preset), preset.name
        offer_notebook("worked_example", weights=preset.name, tokens=ex.tokens, X=ex.X, W_q=ex.W_q, W_k=ex.W_k,
                       W_v=ex.W_v, reveal=STAGES[stage])
    else:
        tokens, X = own_input()
        ex, weights = worked_example(seed, X=X, tokens=tokens), f"seed {seed}"
        offer_notebook("worked_example", rejected=st.session_state.get(REJECTED_EDIT, ""), weights="random",
                       seed=seed, tokens=ex.tokens, X=ex.X, reveal=STAGES[stage])
    labels = unique_labels(ex.tokens)
    n_tokens = len(labels)
    cell = clicked_cell("cell", (n_tokens, n_tokens))  # None for a click remembered from a longer input
    embeddings_section(ex, weights)
    if stage >= 1:
        projections_section(ex, weights, cell, labels)
    if stage >= 2:
        scores_section(ex, weights, stage)
    if stage >= 3 and n_tokens >= 2:
        focus_quiz(ex, labels)
    if stage >= 4:
        weights_section(ex, weights, labels)
        if preset:
            designed_section(ex, preset, labels)
    if stage >= 5:
        output_section(ex, weights, labels)
        torch_section(ex)
    show_source(worked_example, scaled_dot_product_attention, softmax)


def embeddings_section(ex: WorkedExample, weights: str) -> None:
    """Section 1: the tokens' embeddings X."""
    n_tokens, d_model = ex.X.shape
    section("1 · Embeddings X", "One row per token: the input the head starts from.",
            rf"X \in \mathbb{{R}}^{{T \times d_{{model}}}},\quad T = {n_tokens},\ d_{{model}} = {d_model}")
    show_chart(stage_chart("X", ex, weights), alt=matrix_name("Heatmap of the embeddings X", ex.X, "tokens", "dimensions"))


def projections_section(ex: WorkedExample, weights: str, cell: tuple[int, int] | None, labels: list[str]) -> None:
    """Section 2: W_q, W_k, W_v and the queries, keys and values they make (a clicked weight's pair highlighted)."""
    section(
        "2 · Queries, keys and values",
        "Three weight matrices project each embedding three ways: the **query** (what the token looks for), "
        "the **key** (what it offers to be matched on) and the **value** (what it hands over once matched). "
        + ("Here the matrices are designed by hand (below, after the weights: what each query asks for); a trained "
         "model learns its own." if weights in PRESETS else
         "Here the matrices are random draws rounded to one decimal, as in the lesson; a trained model learns them."),
        r"Q = X W_q,\qquad K = X W_k,\qquad V = X W_v",
    )
    d_model, d_k = ex.W_q.shape
    qkv = np.stack([ex.Q, ex.K, ex.V])  # (3, T, d_k)
    show_chart(stage_chart("projections", ex, weights, cell),
               alt=ChartName(f"Heatmaps of W_q, W_k and W_v, {d_model} by {d_k} each, and below them Q, K and V, "
                             f"{ex.Q.shape[0]} tokens by {d_k} columns each",
                             f"Q, K and V: values {value_range(qkv)}."))
    with fixed_slot():
        if cell is not None:
            st.caption(f"Highlighted: the query of “{labels[cell[0]]}” and the key of “{labels[cell[1]]}”, "
                       f"whose dot product is the score {ex.raw_scores[cell]:.3f}. Double-click the map to clear.")


def scores_section(ex: WorkedExample, weights: str, stage: int) -> None:
    """Sections 3 and 4: the raw scores, then (one stage on) the scores scaled by √d_k."""
    section("3 · Raw scores", "Entry (i, j) is the dot product of query i with key j: how well token j matches "
            "what token i looks for.", r"S = Q K^\top,\qquad S_{ij} = q_i \cdot k_j")
    scores = "raw scores"
    if stage >= 3:
        root = np.sqrt(ex.d_k)
        section("4 · Scaling by √d_k", f"Dividing by √d_k = √{ex.d_k} "
                f"{f'= {root:g}' if root == round(root) else f'≈ {root:.2f}'} keeps the scores from "
                "growing with the key width, which would push the softmax into saturation.",
                r"\tilde S = \frac{Q K^\top}{\sqrt{d_k}}")
        scores = "scores"
    raw = matrix_name("the raw attention scores", ex.raw_scores, "queries", "keys")
    name = (ChartName(f"Heatmap of {raw.alt}", raw.numbers) if stage < 3 else
            together("Heatmaps", [raw, matrix_name("the scaled scores", ex.scaled_scores, "queries", "keys")],
                     ["Raw", "Scaled"]))
    show_chart(stage_chart(scores, ex, weights), alt=name)


def focus_quiz(ex: WorkedExample, labels: list[str]) -> None:
    """Which token the second one attends to most, read from its scaled scores."""
    focus = 1  # "cat" in the lesson's example
    favourite = labels[int(np.argmax(ex.weights[focus]))]
    predict_then_reveal(
        f"From the scaled scores alone: which token does “{labels[focus]}” attend to most?", labels, favourite,
        f"Softmax keeps the order of a row, so the largest scaled score wins: {favourite} gets "
        f"{ex.weights[focus].max():.3f} of “{labels[focus]}”'s attention "
        f"(scaled score {ex.scaled_scores[focus].max():.3f}).",
        key="worked_focus",
    )


def weights_section(ex: WorkedExample, weights: str, labels: list[str]) -> None:
    """Section 5: the softmax's weights (clickable), each row summing to 1."""
    section("5 · Softmax: attention weights",
            "Softmax turns each row of scaled scores into a probability distribution: how much attention the "
            "query token pays to every token, itself included. **Click a cell** to highlight the query and key "
            "that produced it in Q and K above.",
            r"A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}},\qquad \sum_j A_{ij} = 1")
    show_chart(stage_chart("weights", ex, weights), on_select="rerun", key="cell", selection_mode="cell",
               alt=weights_name("Heatmap of the attention weights", ex.weights, labels))
    row_sums = ex.weights.sum(axis=1)  # (T,): 1 for every query
    st.caption("Row sums: " + ", ".join(f"{lab}: {s:.3f}" for lab, s in zip(labels, row_sums, strict=True)))


def designed_section(ex: WorkedExample, preset: Preset, labels: list[str]) -> None:
    """What each designed query asks for, and where its weight went: read from the weights above."""
    match = (r"p_j = p_i - 1" if preset.feature == "position" else
             r"\text{kind}_j = \text{looks for}(\text{kind}_i)")
    section("What each query asks for", how_the_weights_are_made(preset),
            rf"(x_i W_q) \cdot (x_j W_k) = s^2\,[\,{match}\,],\quad s = {preset.strength:g}")
    st.markdown("\n".join(f"- {line}" for line in what_each_query_asks(ex, preset, labels)))


def output_section(ex: WorkedExample, weights: str, labels: list[str]) -> None:
    """Section 6: the output, and one token's output as a blend of the values."""
    section("6 · Output: a weighted blend of the values",
            formula=r"\text{output} = A V,\qquad \text{output}_i = \sum_j A_{ij}\, v_j")
    show_chart(stage_chart("output", ex, weights), alt=matrix_name("Heatmap of the output", ex.output, "tokens",
                                                                "dimensions"))

    explain_output(ex, labels)


def torch_section(ex: WorkedExample) -> None:
    """The same Q, K and V through PyTorch, once its expander is opened (or the link opens it)."""
    section("Cross-check with PyTorch")
    check = st.expander("Run the same Q, K and V through PyTorch", key="check", bind="query-params",
                        icon=":material/verified:")
    with check:
        explain("The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention`. "
                "The NumPy code above runs in float64, so they agree to float32 precision (about 1e-7).")
        if check.open:
            # Imported here, not at the top: PyTorch takes seconds to import, and the landing page should not wait
            # for it. (The router starts importing it in the background once this page has been drawn.)
            from core.reference import torch_difference

            st.metric("max |NumPy − PyTorch| of the output", f"{torch_difference(ex.output, ex.Q, ex.K, ex.V):.2e}")


page_body()
