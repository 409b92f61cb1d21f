"""The whole-block page's sentences: each stage's heading, text and formula, what LayerNorm did to the rows, what
each half of the block drew, the output rows' sizes under each placement, and what the deep stack shows, from
`core.transformer_block` and `core.deep_stack` results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from core.deep_stack import DepthSweep
from core.transformer_block import BlockSteps, LayerNormSteps
from ui.chart_names import ChartName, value_range
from ui.charts.transformer_block import HALVES

#: What each stage's row of maps shows, for its chart's accessible name.
STAGE_MAPS = {"attention": "the attention's input, Concat(heads) and the attention's output",
              "add_1": "the stream, attention's output and their sum",
              "norm_1": "each row's mean and variance, the normalised rows and the rows after gamma and beta",
              "ffn": "the hidden layer and the FFN's output",
              "add_2": "the stream, the FFN's output and their sum",
              "norm_2": "each row's mean and variance, the normalised rows and the rows after gamma and beta"}

#: Each stage's heading, text and formula; "{sub}" is the attention sub-layer as its placement writes it.
STAGES = {
    "attention": ("Attention", "The sub-layer the other pages explain: the heads' outputs side by side, mixed by "
                  "W_o. Its input is the block's input (post-LN) or that input normalised (pre-LN).",
                  r"\operatorname{MHA}(z) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_H)\, W_o"),
    "add_1": ("Add: the residual stream", "Attention's output is not what comes next: it is *added* to its "
              "input. The stream of token vectors carries on, and each sub-layer writes an update into it.",
              r"x + {sub}"),
    "norm_1": ("Norm", "Each token's row, on its own: subtract its mean μ, divide by its standard deviation "
               "√(σ² + ε), then scale by γ and shift by β (learned, one per dimension).",
               r"\operatorname{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"),
    "ffn": ("Feed-forward network", "Each token's vector is widened to d_ff, passed through φ, and narrowed back: "
            "the same two matrices for every position, and no position reads another.",
            r"\operatorname{FFN}(h) = \varphi(h W_1 + b_1)\, W_2 + b_2"),
    "add_2": ("Add again", "The feed-forward network's output is added to its input, as attention's was.",
              r"h + \operatorname{FFN}(\cdot)"),
    "norm_2": ("Norm again", "The second LayerNorm, with its own γ and β.",
               r"\operatorname{LN}_2"),
}


def stage_order(placement: str) -> list[str]:
    """The block's stages in the order its placement runs them."""
    return [name for half in HALVES[placement] for name in half]


def stage_titles(placement: str) -> dict[str, str]:
    """Each stage's numbered title (``1.2 · Add: the residual stream``), numbered in the placement's order."""
    return {name: f"1.{number} · {STAGES[name][0]}"
            for number, name in enumerate(stage_order(placement), start=1)}


def fmt(values: np.ndarray) -> str:
    """``2.10, 2.11, 2.07``: numbers with two decimals."""
    return ", ".join(f"{v:.2f}" for v in values)


def norm_sentence(ln: LayerNormSteps) -> str:
    """What the normalised rows' means and variances are, computed."""
    z = ln.normalised
    return (f"Before γ and β every row has mean {np.abs(z.mean(axis=1)).max():.1e} at most (0 up to rounding) "
            f"and variance {z.var(axis=1).min():.5f} to {z.var(axis=1).max():.5f}: σ² / (σ² + ε), 1 less ε's "
            f"share. The rows' own variances were {', '.join(f'{v:.3f}' for v in ln.var)}.")


def half_name(half: Sequence[str], block: BlockSteps, titles: Mapping[str, str]) -> ChartName:
    """A half's chart name (its shape and its rows) and its numbers: each stage's result and, for a norm, what it
    did to the rows."""
    t, d_model = block.input.shape
    shown = {"attention": block.attention.output, "add_1": block.residual_1, "norm_1": block.norm_1.output,
             "ffn": block.ffn.output, "add_2": block.residual_2, "norm_2": block.norm_2.output}
    rows = "; ".join(f"{titles[name]}: {STAGE_MAPS[name]}" for name in half)
    shape = f"{t} tokens by {d_model} dimensions" + (f", the hidden layer {t} by {block.ffn.hidden.shape[1]} units"
                                                     if "ffn" in half else "")
    numbers = []
    for name in half:
        numbers.append(f"{titles[name].split(' · ')[0]}: values {value_range(shown[name])}.")
        if name.startswith("norm"):
            numbers.append(norm_sentence(block.norm_1 if name == "norm_1" else block.norm_2))
    return ChartName(f"Heatmaps of {shape}, one row per stage: {rows}", " ".join(numbers))


def output_sizes(post: np.ndarray, pre: np.ndarray, x: np.ndarray, section: str) -> str:
    """How long the block's output rows are under each placement (`post`, `pre`: the outputs; `x`: the input), and
    where the page shows what that does over many blocks (`section`)."""
    d_model = x.shape[1]
    return (f"The block's output rows are {fmt(np.linalg.norm(post, axis=1))} long with post-LN (the last LN sets "
            f"each row's size, about √d_model = {np.sqrt(d_model):.2f} times γ), {fmt(np.linalg.norm(pre, axis=1))} "
            f"with pre-LN (the input's rows, {fmt(np.linalg.norm(x, axis=1))}, plus two updates). Section {section} "
            "shows what that does over many blocks.")


def gradient_ratio(sweep: DepthSweep) -> float:
    """The gradient reaching block 1 over the top block's (infinite when the top's is 0)."""
    return sweep.grad_norm[0] / sweep.grad_norm[-1] if sweep.grad_norm[-1] > 0 else float("inf")


def sweep_numbers(sweep: DepthSweep) -> str:
    """The sweep's numbers a student reads first: the top's stream, and the gradient at the bottom and the top."""
    return (f"Stream {sweep.stream[0]:.3g} at the input, {sweep.stream[-1]:.3g} at the top; gradient "
            f"{sweep.grad_norm[0]:.3g} at block 1, {sweep.grad_norm[-1]:.3g} at block {sweep.config.depth}.")


def stack_findings(sweep: DepthSweep) -> str:
    """What the deep stack's charts show, in sentences whose numbers are the sweep's (Markdown)."""
    c, depth = sweep.config, sweep.config.depth
    switches = f"residual {'on' if c.residual else 'off'}, norm {'on' if c.norm else 'off'}"
    return (f"**{depth} block{'s' if depth > 1 else ''}, {switches}.** The stream's mean length goes from "
            f"{sweep.stream[0]:.3g} to {sweep.stream[-1]:.3g}; the last block's update is {sweep.update[-1]:.3g} "
            f"long. At the top each token's cosine with its own input is {fmt(sweep.self_cosine[-1])}, and two "
            f"tokens' vectors have a cosine of {sweep.token_cosine[-1]:.2f} on average (input: "
            f"{sweep.token_cosine[0]:.2f}). The gradient reaching block 1 is **{sweep.grad_norm[0]:.3g}**, the top "
            f"block's {sweep.grad_norm[-1]:.3g}: a ratio of {gradient_ratio(sweep):.3g}.")
