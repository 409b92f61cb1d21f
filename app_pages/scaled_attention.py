"""Scaled dot-product attention and the √d_k lab: why the scores are divided by √d_k."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import reference
from core.attention import scaled_dot_product_attention
from core.scaling import (
    POWERS_OF_TWO_D_K,
    ScalingExample,
    ScoreSweep,
    random_qkv,
    row_entropy,
    scaling_example,
    score_sweep,
    softmax_jacobian_norm,
)
from ui.cache import shared_cache
from ui.chart_names import ChartName, largest_weight, value_range
from ui.charts import scaled_attention as charts
from ui.charts.scaled_attention import SCALED, UNSCALED
from ui.display import show_chart
from ui.layout import (
    controls_row,
    explain,
    fixed_slot,
    introduction,
    more_detail,
    page_fragment,
    section,
    show_source,
)
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_select_slider, bound_slider, bound_toggle, seed_slider
from ui.wording.scaled_attention import ringed_points, sweep_bullets, variance_text

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"seq_len": "32", "d_k": "1024", "scaled": "false"}

MAX_SEQ_LEN = 32


@shared_cache(256)
def sweep_at(seq_len: int, seed: int) -> ScoreSweep:
    """The d_k sweep (1 … 1024, ~512 query rows each) depends only on the seed and T: computed once per pair."""
    return score_sweep(seq_len, seed, POWERS_OF_TWO_D_K)


@shared_cache(256)
def example_at(seq_len: int, d_k: int, seed: int, scaled: bool) -> ScalingExample:
    """Q, K, V and their attention at one setting, computed once per setting."""
    return scaling_example(seq_len, d_k, seed, scaled=scaled, max_seq_len=MAX_SEQ_LEN)


@shared_cache(256)
def torch_difference(seq_len: int, d_k: int, seed: int, scaled: bool, _example: ScalingExample) -> float:
    """max |NumPy − PyTorch| of the output, computed once per setting; `_example` is that setting's result."""
    e = _example
    return reference.torch_difference(e.output, e.Q, e.K, e.V, scale=None if scaled else 1.0, dtype=np.float64)


@shared_cache(256)
def chart_specs(seed: int, seq_len: int, d_k: int, scaled: bool,
                _example: ScalingExample, _sweep: ScoreSweep) -> dict[str, dict]:
    """The page's charts, built once per setting. The setting is the cache key; the results are its own."""
    return charts.page_specs(_example, _sweep)


introduction(
    "Scaling by √d_k: the saturation lab",
    "A score is a dot product, a sum of d_k products qᵢkᵢ. If the entries of q and k are independent random "
    "numbers with mean 0 and variance 1, each product has mean 0 and variance 1 too, and the variances of a sum of "
    "independent terms add up: the scores' spread "
    "grows like √d_k. Wide heads would then feed the softmax numbers in the tens, and the softmax turns "
    "into an argmax: one weight near 1, all others near 0. There it is flat (its gradient vanishes), so the "
    "queries and keys barely learn. Dividing by √d_k puts the variance back to 1 at every width.",
    r"\operatorname{Attention}(Q,K,V) = \operatorname{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big)V,"
    r"\qquad \operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i) = d_k,"
    r"\qquad \operatorname{Var}\Big(\frac{q\cdot k}{\sqrt{d_k}}\Big) = 1",
)


@page_fragment
def page_body() -> None:
    seed, seq_len, d_k, scaled = scaling_controls()
    offer_notebook("scaled_attention", seed=seed, seq_len=seq_len, d_k=d_k, scaled=scaled)
    example = example_at(seq_len, d_k, seed, scaled)
    sweep = sweep_at(seq_len, seed)
    specs = chart_specs(seed, seq_len, d_k, scaled, example, sweep)
    attention_map_section(example, specs, seed, scaled)
    every_d_k_section(sweep, example, specs, scaled)
    torch_section(seq_len, d_k, seed, scaled, example)
    saturation_quiz(sweep)
    show_source(random_qkv, scaling_example, score_sweep, row_entropy, softmax_jacobian_norm,
                scaled_dot_product_attention)


def scaling_controls() -> tuple[int, int, int, bool]:
    """The seed, the sequence length T, the key width d_k, and whether the scores are divided by √d_k."""
    with controls_row():
        seed = seed_slider(lesson_seed=False)
        seq_len = int(bound_slider("Sequence length T", "seq_len", 2, MAX_SEQ_LEN, 8,
                                   help="Number of tokens: each row of the attention map is a softmax over T keys."))
        d_k = int(bound_select_slider("Key width d_k", "d_k", POWERS_OF_TWO_D_K, 64,
                                      help="Width of the queries and keys, in powers of two from 1 to 1024."))
        scaled = bound_toggle("Divide by √d_k", "scaled", True,
                              help="On: softmax(QKᵀ/√d_k), as in the Transformer. Off: softmax(QKᵀ).")
    return seed, seq_len, d_k, scaled


def attention_map_section(example: ScalingExample, specs: dict[str, dict], seed: int, scaled: bool) -> None:
    """Section 1: the scores and weights at these settings, and how saturated the softmax is."""
    seq_len, d_k = example.Q.shape
    now = example.stats

    score_name = "QKᵀ / √d_k" if scaled else "QKᵀ"
    section(
        "1 · The attention map at these settings",
        f"Q, K and V are {seq_len} × {d_k} matrices of standard-normal numbers (seed {seed}). "
        f"Left, the scores {score_name} that go into the softmax; right, the resulting weights, one row per query. "
        "Hover over a weight to see the arithmetic that produced it.",
        keep_text=True,
    )
    score_var = float(example.scores.var())
    with st.container(horizontal=True):
        st.metric("variance of these scores", variance_text(score_var),
                  help=f"Expected: {'1 (scaled)' if scaled else f'd_k = {d_k} (unscaled)'}. This is one sample of "
                       f"T² = {seq_len ** 2} scores, so it scatters around that; section 2 averages many samples.")
        st.metric("largest weight (mean over rows)", f"{now.max_weight:.3f}",
                  help=f"1/T = {1 / seq_len:.3f} for a uniform row, 1 for a saturated (one-hot) row.")
    with more_detail("how spread out the rows are, and how much gradient they pass back"):
        st.markdown("Two more measures of a row p of weights, averaged over the rows: its **entropy** "
                    "−Σ_j p_j ln p_j, in nats (the unit of the natural logarithm), ln T when the row is uniform and 0 "
                    "when it is one-hot; and the size of the **softmax's Jacobian** ‖diag(p) − ppᵀ‖_F, how much the "
                    "weights move when the scores do, which is the gradient W_q and W_k learn from: 0 when one-hot.")
        with st.container(horizontal=True):
            st.metric("row entropy (mean, nats)", f"{now.entropy:.3f}",
                      help=f"ln T = {np.log(seq_len):.3f} for a uniform row, 0 for a one-hot row.")
            st.metric("softmax Jacobian norm (mean)", f"{now.jacobian_norm:.3g}",
                      help=f"√(T−1)/T = {np.sqrt(seq_len - 1) / seq_len:.3f} for a uniform row, 0 for a one-hot "
                           "row (no gradient).")
    with fixed_slot():
        if now.max_weight > 0.9:
            st.warning(
                f"Saturated: on average the largest weight in a row is {now.max_weight:.3f}, so the softmax acts "
                "almost like an argmax and its gradient is close to zero."
                + ("" if scaled else " Switch on the scaling to see the weights spread out again."),
                icon=":material/warning:",
            )

    labels = charts.token_labels(seq_len)
    show_chart(specs["maps"], alt=ChartName(
        f"Heatmaps of the scores {score_name} and of the attention weights, {seq_len} queries by {seq_len} keys each",
        f"Scores {value_range(example.scores)}. Largest weight {largest_weight(example.weights, labels, labels)}."))


def every_d_k_section(sweep: ScoreSweep, example: ScalingExample, specs: dict[str, dict], scaled: bool) -> None:
    """Section 2: the score variance and the softmax's saturation over every d_k, scaled and unscaled."""
    seq_len = sweep.seq_len
    section(
        "2 · The same story over every d_k",
        f"Each point averages {sweep.n_samples} independent random {seq_len} × {seq_len} score matrices "
        f"({sweep.n_samples * seq_len} softmax rows), with ({SCALED.split(':')[0]}) and without "
        f"({UNSCALED.split(':')[0]}) the scaling. "
        + ringed_points(sweep, example, scaled, (SCALED if scaled else UNSCALED).split(":")[0]),
        keep_text=True,
    )
    idea, detail = sweep_bullets(sweep)
    explain(idea)
    with more_detail("row entropy and the softmax's gradient"):
        st.markdown(detail)
        st.latex(r"J = \frac{\partial\,\operatorname{softmax}(s)}{\partial s} = \operatorname{diag}(p) - p\,p^\top,"
                 r"\qquad \lVert J\rVert_F \to 0 \text{ as } p \to \text{one-hot}")

    widest = f"d_k = {sweep.d_k[-1]}"
    every_d_k = f"d_k from {sweep.d_k[0]} to {sweep.d_k[-1]}, scaled and unscaled"
    show_chart(specs["variance"], alt=ChartName(
        f"Variance of the scores against {every_d_k}, on log-log axes",
        f"At {widest}: {sweep.var_raw[-1]:.0f} unscaled, {sweep.var_scaled[-1]:.2f} scaled."))
    show_chart(specs["saturation"], alt=ChartName(
        f"Largest weight, row entropy and softmax Jacobian norm against {every_d_k}",
        f"At {widest} the largest weight is {sweep.max_weight_raw[-1]:.2f} unscaled and "
        f"{sweep.max_weight_scaled[-1]:.2f} scaled."))


def torch_section(seq_len: int, d_k: int, seed: int, scaled: bool, example: ScalingExample) -> None:
    """Section 3: the output against PyTorch's, in float64."""
    section(
        "3 · Cross-check with PyTorch",
        "The same Q, K and V through `torch.nn.functional.scaled_dot_product_attention`, "
        + ("with its default scale 1/√d_k. " if scaled else "with `scale=1.0` (no scaling), as on our side. ")
        + "Both sides run in float64, so any difference beyond rounding would be a bug.",
        keep_text=True,
    )
    st.metric("max |NumPy − PyTorch| of the output", f"{torch_difference(seq_len, d_k, seed, scaled, example):.2e}")


def saturation_quiz(sweep: ScoreSweep) -> None:
    """Without scaling, what a 16 times wider d_k does to a row's largest weight."""
    small, big = 16, 256
    i_small, i_big = (int(np.flatnonzero(sweep.d_k == d)[0]) for d in (small, big))
    w_small, w_big = float(sweep.max_weight_raw[i_small]), float(sweep.max_weight_raw[i_big])
    trend = ("it grows towards 1" if w_big > w_small + 0.02 else
             "it shrinks towards 1/T" if w_big < w_small - 0.02 else "it stays about the same")
    predict_then_reveal(
        f"Without scaling, d_k grows 16× (from {small} to {big}). "
        "What happens to the largest attention weight in a row?",
        ["it grows towards 1", "it shrinks towards 1/T", "it stays about the same"], trend,
        f"Measured over {sweep.n_samples} random rows of length {sweep.seq_len}: {w_small:.3f} at d_k = {small}, "
        f"{w_big:.3f} at d_k = {big}. The raw scores' spread grows like √d_k, so the softmax saturates.",
        key="scaling_16x",
    )


page_body()
