"""Worked example: the lesson's three tokens through one attention head, every matrix shown."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import scaled_dot_product_attention, softmax, worked_example
from core.reference import max_abs_diff, torch_scaled_dot_product_attention
from ui.charts import heatmap, side_by_side, unique_labels
from ui.controls import bound_choice, seed_slider, show_chart, show_source

st.title("Worked example: three tokens, by hand")
st.markdown(
    "Three tokens, each already a 4-dimensional embedding, go through one attention head. "
    "Every matrix below is computed live by `core.worked_example`; move the seed to draw "
    "different weight matrices and watch every later step change."
)

with st.container(horizontal=True, vertical_alignment="bottom"):
    seed = seed_slider()

ex = worked_example(seed)
labels = unique_labels(ex.tokens)
dims = [f"d{j}" for j in range(ex.X.shape[1])]


st.header("1 · Embeddings X")
st.markdown("One row per token: the input the head starts from.")
n_tokens, d_model = ex.X.shape
st.latex(rf"X \in \mathbb{{R}}^{{T \times d_{{model}}}},\quad T = {n_tokens},\ d_{{model}} = {d_model}")
show_chart(heatmap(ex.X, row_labels=labels, col_labels=dims, title="X", x_title="embedding dim",
                   y_title="token"), alt="Heatmap of the embedding matrix X")

st.header("2 · Weight matrices W_q, W_k, W_v")
st.markdown(
    "Three learned matrices. Here they are random draws rounded to one decimal, exactly as the "
    "lesson makes them; in a trained model they are learned by gradient descent."
)
w_kw = dict(row_labels=dims, col_labels=dims, x_title="out dim", y_title="in dim", value_format=".1f")
show_chart(side_by_side(heatmap(ex.W_q, title="W_q", **w_kw), heatmap(ex.W_k, title="W_k", **w_kw),
                        heatmap(ex.W_v, title="W_v", **w_kw)), alt="Heatmaps of W_q, W_k and W_v")

st.header("3 · Queries, keys and values")
st.markdown(
    "Each token's embedding is projected three ways: the **query** (what it looks for), the "
    "**key** (what it offers to be matched on) and the **value** (what it hands over once matched)."
)
st.latex(r"Q = X W_q,\qquad K = X W_k,\qquad V = X W_v")
qkv_kw = dict(row_labels=labels, col_labels=dims, x_title="dim", y_title="token")
show_chart(side_by_side(heatmap(ex.Q, title="Q", **qkv_kw), heatmap(ex.K, title="K", **qkv_kw),
                        heatmap(ex.V, title="V", **qkv_kw)), alt="Heatmaps of Q, K and V")

st.header("4 · Raw scores and scaling")
st.markdown(
    "Entry (i, j) is the dot product of query i with key j: how well token j matches what token i "
    f"looks for. Dividing by √d_k = √{ex.d_k} = {np.sqrt(ex.d_k):g} keeps the scores from growing "
    "with the key width, which would saturate the softmax."
)
st.latex(r"S = Q K^\top,\qquad \tilde S = \frac{Q K^\top}{\sqrt{d_k}}")
score_kw = dict(row_labels=labels, col_labels=labels, x_title="key token", y_title="query token")
scores_domain = (-float(np.abs(ex.raw_scores).max()), float(np.abs(ex.raw_scores).max()))
show_chart(
    side_by_side(
        heatmap(ex.raw_scores, title="raw scores Q Kᵀ", domain=scores_domain, **score_kw),
        heatmap(ex.scaled_scores, title=f"scaled scores Q Kᵀ / √{ex.d_k}", domain=scores_domain, **score_kw),
        shared_color=True,
    ),
    alt="Heatmaps of the raw and scaled attention scores",
)

st.header("5 · Softmax: attention weights")
st.markdown(
    "Softmax turns each row of scaled scores into a probability distribution: how much attention "
    "the query token pays to every token, itself included."
)
st.latex(r"A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}},\qquad \sum_j A_{ij} = 1")
show_chart(heatmap(ex.weights, signed=False, title="attention weights A", **score_kw),
           alt="Heatmap of the attention weights")
row_sums = ex.weights.sum(axis=1)
st.caption("Row sums: " + ", ".join(f"{lab}: {s:.3f}" for lab, s in zip(labels, row_sums, strict=True)))

st.header("6 · Output: a weighted blend of the values")
st.latex(r"\text{output} = A V,\qquad \text{output}_i = \sum_j A_{ij}\, v_j")
show_chart(heatmap(ex.output, title="output = A V", **qkv_kw), alt="Heatmap of the output matrix")

token = bound_choice("Explain the output of token", "token", labels, default=labels[0],
                     help="Shows this token's output as the weighted sum of the value vectors.")
i = labels.index(token)


def fmt_vec(v: np.ndarray) -> str:
    return r"\begin{bmatrix}" + " & ".join(f"{x:.3f}" for x in v) + r"\end{bmatrix}"


terms = " + ".join(f"{ex.weights[i, j]:.3f}\\,v_{{{j + 1}}}" for j in range(len(labels)))
st.latex(rf"\text{{output}}_{{\text{{{ex.tokens[i]}}}}} = {terms} = {fmt_vec(ex.output[i])}")
with st.expander("The value vectors v₁ … v_T"):
    rows = r"\\".join(rf"v_{{{j + 1}}} = {fmt_vec(ex.V[j])}\ \ (\text{{{t}}})" for j, t in enumerate(ex.tokens))
    st.latex(r"\begin{gathered}" + rows + r"\end{gathered}")

st.header("Cross-check with PyTorch")
st.markdown(
    "The same Q, K and V, in float32, through `torch.nn.functional.scaled_dot_product_attention`. "
    "The NumPy code above runs in float64, so they agree to float32 precision (about 1e-7)."
)
torch_out = torch_scaled_dot_product_attention(ex.Q, ex.K, ex.V)
st.metric("max |NumPy − PyTorch| of the output", f"{max_abs_diff(ex.output, torch_out):.2e}")

show_source(worked_example, scaled_dot_product_attention, softmax)
