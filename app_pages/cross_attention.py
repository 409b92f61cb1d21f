"""Encoder, decoder and cross-attention: the original Transformer's three attention maps side by side."""

from __future__ import annotations

import streamlit as st

from core.encoder_decoder import EncoderDecoderAttention, attend, encoder_decoder_attention, shifted_right
from core.reference import torch_difference
from ui.cache import shared_cache
from ui.chart_names import together, weights_name
from ui.charts import cross_attention as charts
from ui.charts.heatmap import unique_labels
from ui.display import clicked_cell, show_chart
from ui.layout import controls_row, explain, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_select_slider, seed_slider, tokens_input
from ui.wording.cross_attention import alignment, what_each_row_predicts

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"src": "w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11", "tgt": "v0 v1 v2 v3 v4 v5 v6 v7 v8 v9 v10 v11"}

DEFAULT_SRC = "the cat sat on the mat"
DEFAULT_TGT = "le chat s'est assis"
MAX_TOKENS = 12
D_MODELS = [4, 8, 16, 32, 64]
#: Widget key of the clickable cross-attention map (its selection state, not in the URL).
CLICK_KEY = "cross_cell"


@shared_cache(256)
def attention_for(src: tuple[str, ...], tgt: tuple[str, ...], d_model: int, seed: int) -> EncoderDecoderAttention:
    """The three attentions for these sentences, computed once per input."""
    return encoder_decoder_attention(src, shifted_right(tgt), d_model=d_model, seed=seed)


@shared_cache(256)
def torch_differences(src: tuple[str, ...], tgt: tuple[str, ...], d_model: int, seed: int,
                      _attention: EncoderDecoderAttention) -> dict[str, float]:
    """max |NumPy − PyTorch| of each attention's output, computed once per input; `_attention` is its result."""
    blocks = {"cross-attention": _attention.cross, "decoder masked self-attention": _attention.decoder,
              "encoder self-attention": _attention.encoder}
    return {name: torch_difference(block.attended, block.Q, block.K, block.V, block.mask)
            for name, block in blocks.items()}


@shared_cache(256)
def chart_specs(src: tuple[str, ...], tgt: tuple[str, ...], d_model: int, seed: int, cell: tuple[int, int] | None,
                _attention: EncoderDecoderAttention) -> dict[str, dict]:
    """The page's charts, built once per input (the cache key); `_attention` is that input's result."""
    return charts.page_specs(_attention, cell)


introduction(
    "Encoder, decoder and cross-attention",
    "The original Transformer translates with two stacks. The **encoder** reads the whole source "
    "sentence at once; the **decoder** writes the target sentence one token at a time. Three different "
    "attentions connect them, and they differ only in *where the queries, keys and values come from* "
    "and in whether a mask hides the future. Type two sentences of different lengths and watch the "
    "third map stop being square.",
)


@page_fragment
def page_body() -> None:
    src, tgt, seed, d_model = sentence_controls()
    offer_notebook("cross_attention", src=" ".join(src), tgt=" ".join(tgt), seed=seed, d_model=d_model)
    attention = attention_for(tuple(src), tuple(tgt), d_model, seed)
    src_labels, tgt_labels = unique_labels(attention.src_tokens), unique_labels(attention.tgt_tokens)
    clicked = clicked_cell(CLICK_KEY, (len(tgt_labels), len(src_labels)))
    specs = chart_specs(tuple(src), tuple(tgt), d_model, seed, clicked, attention)
    where_qkv_come_from_section(attention, tgt, d_model)
    self_attention_section(attention, specs, clicked, src_labels, tgt_labels)
    cross_attention_section(attention, specs, clicked, src_labels, tgt_labels, d_model, seed)
    torch_section(tuple(src), tuple(tgt), d_model, seed, attention)
    decoder_only_note(attention, len(src_labels), len(tgt_labels))
    show_source(encoder_decoder_attention, attend)


def sentence_controls() -> tuple[list[str], list[str], int, int]:
    """The two sentences, the seed and d_model."""
    src_col, tgt_col = st.columns(2)
    src = tokens_input("Source sentence (encoder input)", "src", DEFAULT_SRC, max_tokens=MAX_TOKENS, container=src_col,
                       help=f"The sentence to translate: words separated by spaces, at most {MAX_TOKENS}.")
    tgt = tokens_input("Target sentence (the translation)", "tgt", DEFAULT_TGT, max_tokens=MAX_TOKENS,
                       container=tgt_col,
                       help=f"The translation the decoder learns to write: words separated by spaces, at most "
                            f"{MAX_TOKENS}. The decoder reads it shifted right, starting with <s>.")
    with controls_row():
        seed = seed_slider(lesson_seed=False)
        d_model = int(bound_select_slider(
            "Embedding width d_model", "d_model", D_MODELS, 16,
            help="Width of every embedding, query, key and value (one head, so d_k = d_model).",
        ))
    return src, tgt, seed, d_model


def where_qkv_come_from_section(attention: EncoderDecoderAttention, target: list[str], d_model: int) -> None:
    """Section 1: the two stacks as a diagram, and a table of where each attention's Q, K and V come from."""
    t_src, t_tgt = len(attention.src_tokens), len(attention.tgt_tokens)
    section(
        "1 · Where Q, K and V come from",
        what_each_row_predicts(attention.tgt_tokens, target) + " Both the source and the decoder's input are "
        "embedded (same word, same vector) and get the sinusoidal positional encoding added, so a repeated word "
        "(the two *the*s of the default source) still gets two different rows. Then:",
    )
    st.graphviz_chart(
        f"""digraph {{
  rankdir=TB; bgcolor="transparent"; nodesep=0.5; ranksep=0.35;
  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12, color="#555555", margin="0.15,0.06"];
  edge [fontname="Helvetica", fontsize=12, color="#555555"];
  src [label="source: {t_src} tokens × {d_model}", fillcolor="#cfe2f3"];
  enc [label="encoder self-attention\nQ, K, V ← source · map {t_src} × {t_src}", fillcolor="#cfe2f3"];
  mem [label="memory M (encoder output)\n{t_src} × {d_model}", fillcolor="#cfe2f3"];
  tgt [label="target shifted right: {t_tgt} tokens × {d_model}", fillcolor="#fde0c5"];
  dec [label="decoder masked self-attention\nQ, K, V ← target · map {t_tgt} × {t_tgt}", fillcolor="#fde0c5"];
  cross [label="cross-attention\nQ ← decoder, K, V ← memory · map {t_tgt} × {t_src}", fillcolor="#e6e6e6"];
  out [label="decoder output: {t_tgt} × {d_model}", fillcolor="#fde0c5"];
  {{rank=same; src; tgt}} {{rank=same; enc; dec}} {{rank=same; mem; cross}}
  src -> enc -> mem; tgt -> dec; dec -> cross [label=" Q"]; mem -> cross [label="K, V"]; cross -> out;
}}""",
        alt="Diagram: the source feeds the encoder's self-attention, whose output (the memory) gives the keys and "
            "values of cross-attention; the target feeds the decoder's masked self-attention, which gives its queries.",
    )
    st.markdown(
        f"""
| attention | queries **Q** from | keys **K** and values **V** from | mask | weight map |
|---|---|---|---|---|
| encoder self-attention | source | source | none: looks both ways | T_src × T_src = {t_src} × {t_src} |
| decoder masked self-attention | target shifted right | target shifted right | causal: nothing after itself | T_tgt × T_tgt = {t_tgt} × {t_tgt} |
| cross-attention | decoder (target shifted right) | encoder output (source) | none | T_tgt × T_src = {t_tgt} × {t_src} |
"""
    )
    st.caption(
        "One layer of each, one head each, with the paper's residual connections (X + attention); "
        "layer norm and the feed-forward blocks are left out. The weights are random, not trained, so the "
        "patterns below are arbitrary: a trained translator would learn to look, from each row, at the source "
        "words that give the word the row predicts."
    )


def self_attention_section(attention: EncoderDecoderAttention, specs: dict[str, dict], clicked: tuple[int, int] | None,
                           src_labels: list[str], tgt_labels: list[str]) -> None:
    """Section 2: the encoder's and the decoder's self-attention maps, and what the causal mask leaves."""
    t_src, t_tgt = len(src_labels), len(tgt_labels)
    st.header("2 · The two self-attentions")
    enc_text, dec_text = st.columns(2)
    with enc_text:
        explain(
            "**Encoder:** the source sentence exists in full, so every source word may look at every "
            "other, before and after it. The map is square and nothing in it is masked."
        )
        st.latex(r"\begin{gathered}(Q,\ K,\ V) = X_{src}\,(W_q^{enc},\ W_k^{enc},\ W_v^{enc})\\"
                 r"A^{enc} = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)"
                 rf" \in \mathbb{{R}}^{{{t_src} \times {t_src}}}\end{{gathered}}")
    with dec_text:
        explain(
            "**Decoder:** at generation time the later target words do not exist yet, so a causal mask "
            "lets each word see only itself and the words before it: exact zeros above the diagonal."
        )
        st.latex(r"\begin{gathered}(Q,\ K,\ V) = X_{tgt}\,(W_q^{dec},\ W_k^{dec},\ W_v^{dec})\\"
                 r"A^{dec} = \operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + \text{mask}\right)"
                 rf" \in \mathbb{{R}}^{{{t_tgt} \times {t_tgt}}}\end{{gathered}}")
    show_chart(specs["self"], alt=together("Heatmaps of the self-attention weights",
                                           [weights_name("the encoder's", attention.encoder.weights, src_labels),
                                            weights_name("the decoder's", attention.decoder.weights, tgt_labels)],
                                           ["Encoder", "Decoder"]))
    with fixed_slot():
        if clicked is not None:
            st.caption(f"Highlighted for the clicked cross-attention weight ({tgt_labels[clicked[0]]}, "
                       f"{src_labels[clicked[1]]}) below: row “{src_labels[clicked[1]]}” of the encoder map and row "
                       f"“{tgt_labels[clicked[0]]}” of the decoder map.")

    above = attention.decoder.weights[~attention.decoder.mask]
    masked_note = (
        f"Largest decoder weight above the diagonal: {above.max():g} (over {above.size} masked cells)."
        if above.size else "A one-word target has nothing above the diagonal to mask."
    )
    row_sum_error = max(abs(m.sum(axis=1) - 1).max() for m in (attention.encoder.weights, attention.decoder.weights))
    st.caption(f"{masked_note} Every row of both maps sums to 1 (largest deviation {row_sum_error:.0e}).")


def cross_attention_section(attention: EncoderDecoderAttention, specs: dict[str, dict],
                            clicked: tuple[int, int] | None, src_labels: list[str], tgt_labels: list[str],
                            d_model: int, seed: int) -> None:
    """Section 3: the cross-attention map (clickable), target words on the rows, source words on the columns."""
    t_src, t_tgt = len(src_labels), len(tgt_labels)
    section(
        "3 · Cross-attention: the decoder reads the source",
        "Each **decoder** position asks a question for the target word it predicts (its query comes from H, the "
        "decoder's masked self-attention output) and the **source** words answer (keys and values come from M, the "
        "encoder's output, also called the *memory*). So the rows are the decoder's positions, one per target word, "
        "labelled with the word each reads, and the columns are source words: the map is "
        f"{t_tgt} × {t_src}, square only if the two sentences happen to have the same length. There is no "
        "mask: the whole source is known before the decoder starts.",
        r"\begin{gathered}"
        rf"\underbrace{{Q = H W_q^{{x}}}}_{{{t_tgt} \times {d_model}}},\quad "
        rf"\underbrace{{K = M W_k^{{x}}}}_{{{t_src} \times {d_model}}},\quad "
        rf"\underbrace{{V = M W_v^{{x}}}}_{{{t_src} \times {d_model}}}\\[4pt] "
        rf"A^{{x}} = \operatorname{{softmax}}\!\left(\frac{{Q K^\top}}{{\sqrt{{d_k}}}}\right) "
        rf"\in \mathbb{{R}}^{{{t_tgt} \times {t_src}}},\qquad A^{{x}} V \in \mathbb{{R}}^{{{t_tgt} \times {d_model}}}"
        r"\end{gathered}",
    )
    st.caption("Hover a weight to see how it was computed; **click** it to see where its query and its key come from.")
    show_chart(
        specs["cross"],
        alt=weights_name("Heatmap of the cross-attention weights, target words on the rows, source words on the "
                         "columns", attention.cross.weights, tgt_labels, src_labels),
        on_select="rerun", key=CLICK_KEY, selection_mode="cell",
    )
    st.caption(alignment(attention.cross.weights, tgt_labels, src_labels, seed))
    with fixed_slot():
        if clicked is not None:
            query, key = tgt_labels[clicked[0]], src_labels[clicked[1]]
            st.caption(
                f"Clicked A^x[{query}, {key}] = {attention.cross.weights[clicked]:.3f}. Its query comes from H, the "
                f"decoder's state for “{query}”, made with row “{query}” of the decoder map; its key (and value) "
                f"from M, the encoder's output for “{key}”, made with row “{key}” of the encoder map. Both rows are "
                "highlighted above; double-click the map to clear."
            )

    with fixed_slot():
        if t_src == 1:
            st.caption("With a single source word every row is exactly 1: "
                       "a softmax over one key has nowhere else to go.")

    explain(
        "Try it: change a target word and only the rows after it change, the rows that read it, because every "
        "decoder state is computed behind the causal mask; change the **last** target word and no map changes, as "
        "no row reads it. Change **any** source word and every row changes."
    )


def torch_section(src: tuple[str, ...], tgt: tuple[str, ...], d_model: int, seed: int,
                  attention: EncoderDecoderAttention) -> None:
    """Section 4: each attention's output against PyTorch's."""
    section(
        "4 · Cross-check with PyTorch",
        "The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention` "
        "(the decoder's with its causal mask). NumPy runs in float64, so they agree to float32 precision (below 1e-6).",
    )
    with st.container(horizontal=True):
        for name, difference in torch_differences(src, tgt, d_model, seed, attention).items():
            st.metric(f"max |NumPy − PyTorch|, {name}", f"{difference:.2e}", border=True)


def decoder_only_note(attention: EncoderDecoderAttention, t_src: int, t_tgt: int) -> None:
    """Where GPT-style models fit, and the question about the cross-attention map's rows."""
    st.info(
        "**Decoder-only models.** GPT-style large language models drop the encoder and with it the "
        "cross-attention: they keep just the masked self-attention stack (the decoder's map in section 2), "
        "trained to predict the next token. The prompt is simply the beginning of the target sentence.",
        icon=":material/lightbulb:",
    )

    rows_are = "target (decoder) words" if attention.cross.weights.shape[0] == t_tgt else "source (encoder) words"
    predict_then_reveal(
        "In cross-attention, the rows of the map (the queries) belong to…",
        ["target (decoder) words", "source (encoder) words"], rows_are,
        f"The map is {attention.cross.weights.shape[0]} × {attention.cross.weights.shape[1]}: one row per target word "
        f"({t_tgt}), one column per source word ({t_src}). The decoder asks, the encoder's output answers.",
        key="cross_rows",
    )


page_body()
