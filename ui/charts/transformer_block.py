"""The whole-block page's charts: the model's diagram, every stage of one block, the deep stack and the FFN's shuffle.

Each stage is drawn as heatmaps side by side, every cell's arithmetic in its tooltip (and in "Show the numbers"):
the residual sum ``x + a = s``, LayerNorm's ``(x − μ) / √(σ² + ε) = z`` and ``γ z + β``, the FFN's ``φ(p) = h``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np

from core.deep_stack import DepthSweep
from core.transformer_block import LN_EPS, BlockSteps, LayerNormSteps, PermutationCheck
from ui.charts.arrange import one_above_other, side_by_side
from ui.charts.heatmap import heatmap_part, unique_labels
from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE, CATEGORY, DARK_GREY, REFERENCE_GREY, VERMILLION, ink_on
from ui.charts.template import DataSource, Make, Part, compose, part_builder, part_spec
from ui.charts.tooltips import cell_texts

#: The model's parts, top to bottom: (label, the page that explains it, its kind: attention, this page, other).
MODEL_PARTS: tuple[tuple[str, str, str], ...] = (
    ("Tokens: the cat sat", "Worked example", "other"),
    ("Embedding + positional encoding", "Positional encoding", "other"),
    ("Multi-head attention", "Multi-head attention", "attention"),
    ("Add & norm", "this page", "block"),
    ("Feed-forward network", "this page", "block"),
    ("Add & norm", "this page", "block"),
    ("Linear + softmax: output probabilities", "A decoder that writes", "other"),
)
KIND_COLOURS = {"attention": BLUE, "block": VERMILLION, "other": DARK_GREY}
#: The diagram's width in pixels: it fits a 390-px phone with the page's margins.
DIAGRAM_WIDTH = 330
BOX_HEIGHT, GAP = 40, 18


@part_builder(data=("depth_label",))
def model_diagram_part(depth_label: str, *, stages: int = len(MODEL_PARTS)) -> tuple[list[Rows], Make]:
    """The whole model as boxes top to bottom, the repeated block framed and labelled with its count (`depth_label`).

    Each box names the page that explains it; the colours say which: attention's pages, this page, the others.
    """
    n = stages
    top = np.arange(n) * (BOX_HEIGHT + GAP) + 10.0
    kinds = [kind for _, _, kind in MODEL_PARTS[:n]]
    boxes = Rows({
        "label": np.array([label for label, _, _ in MODEL_PARTS[:n]], dtype=object),
        "page": np.array([f"→ {page}" for _, page, _ in MODEL_PARTS[:n]], dtype=object),
        "kind": np.array(kinds, dtype=object),
        "fill": np.array([KIND_COLOURS[k] for k in kinds], dtype=object),
        "left": np.full(n, 30.0),
        "ink": np.array([ink_on(KIND_COLOURS[k]) for k in kinds], dtype=object),
        "y": top, "y2": top + BOX_HEIGHT, "next": np.append(top[1:], np.nan),
    })
    inside = [i for i, k in enumerate(kinds) if k in ("attention", "block")]
    frame = Rows({"y": [top[inside[0]] - 6], "y2": [top[inside[-1]] + BOX_HEIGHT + 6], "label": [depth_label]})
    height = float(top[-1] + BOX_HEIGHT + 10)

    def make(data: DataSource) -> alt.LayerChart:
        y_scale = alt.Scale(domain=[0, height], reverse=True)
        y = alt.Y(field="y", type="quantitative", scale=y_scale, axis=None)
        box_data = data()
        # A bar per part (its table is "Show the numbers"' list of the parts), filled with its kind's colour.
        rect = alt.Chart(box_data, mark=alt.MarkDef(type="bar", cornerRadius=4)).encode(
            x=alt.X(field="left", type="quantitative", scale=alt.Scale(domain=[0, DIAGRAM_WIDTH]), axis=None),
            x2=alt.X2(datum=DIAGRAM_WIDTH - 40), y=y, y2=alt.Y2(field="y2"),
            fill=alt.Fill(field="fill", type="nominal", scale=None),
            tooltip=[alt.Tooltip(field="label", type="nominal", title="part"),
                     alt.Tooltip(field="page", type="nominal", title="explained on")])
        text_enc = dict(x=alt.X(datum=40, type="quantitative", scale=alt.Scale(domain=[0, DIAGRAM_WIDTH]), axis=None),
                        color=alt.Color(field="ink", type="nominal", scale=None))
        label = alt.Chart(box_data, mark=alt.MarkDef(type="text", align="left", baseline="top", fontSize=13,
                                                     fontWeight="bold", dy=5)).encode(
            y=y, text=alt.Text(field="label", type="nominal"), **text_enc)
        page = alt.Chart(box_data, mark=alt.MarkDef(type="text", align="left", baseline="bottom", fontSize=11,
                                                    dy=-5)).encode(
            y=alt.Y(field="y2", type="quantitative", scale=y_scale, axis=None),
            text=alt.Text(field="page", type="nominal"), **text_enc)
        arrow = alt.Chart(box_data, mark=alt.MarkDef(type="rule", color=REFERENCE_GREY, strokeWidth=2)).encode(
            x=alt.X(datum=(DIAGRAM_WIDTH - 10) / 2, type="quantitative", scale=alt.Scale(domain=[0, DIAGRAM_WIDTH]),
                    axis=None),
            y=alt.Y(field="y2", type="quantitative", scale=y_scale, axis=None), y2=alt.Y2(field="next"))
        frame_data = data()
        frame_mark = alt.Chart(frame_data, mark=alt.MarkDef(type="rect", fillOpacity=0, stroke=REFERENCE_GREY,
                                                            strokeDash=[5, 3], strokeWidth=1.5)).encode(
            x=alt.X(datum=22, type="quantitative", scale=alt.Scale(domain=[0, DIAGRAM_WIDTH]), axis=None),
            x2=alt.X2(datum=DIAGRAM_WIDTH - 32), y=y, y2=alt.Y2(field="y2"))
        frame_label = alt.Chart(frame_data, mark=alt.MarkDef(type="text", align="left", baseline="middle",
                                                             fontSize=13, fontWeight="bold", color=DARK_GREY,
                                                             angle=90, dx=0)).encode(
            x=alt.X(datum=DIAGRAM_WIDTH - 18, type="quantitative", scale=alt.Scale(domain=[0, DIAGRAM_WIDTH]),
                    axis=None),
            y=y, text=alt.Text(field="label", type="nominal"))
        return alt.LayerChart(layer=[arrow, rect, label, page, frame_mark, frame_label], width=DIAGRAM_WIDTH,
                              height=height, title="The whole model")

    return [boxes, frame], make


def residual_tooltip(stream: np.ndarray, update: np.ndarray, total: np.ndarray) -> np.ndarray:
    """``x + a = s`` per cell."""
    return cell_texts("%.3f + %.3f = %.3f", stream, update, total)


def norm_tooltip(ln: LayerNormSteps, eps: float = LN_EPS) -> np.ndarray:
    """The normalised cells' ``(x − μ) / √(σ² + ε) = z``, the square root worked out."""
    sd = np.sqrt(ln.var + eps)  # (T,)
    return cell_texts("(%.3f − %.3f) / %.3f = %.3f", ln.input, ln.mean[:, None], sd[:, None], ln.normalised)


def scale_tooltip(ln: LayerNormSteps, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``γ × z + β = y`` per cell."""
    return cell_texts("%.2f × %.3f + %.2f = %.3f", gamma, ln.normalised, beta, ln.output)


def ffn_tooltip(block: BlockSteps) -> np.ndarray:
    """The hidden cells' ``φ(x · W₁[:, j] + b₁[j]) = φ(p) = h``."""
    phi = "ReLU" if block.activation == "relu" else "GELU"
    return cell_texts(f"{phi}(%.3f) = %.3f", block.ffn.pre_activation, block.ffn.hidden)


#: The block's maps are this many pixels wide whatever d_model (each column MAP_WIDTH / d_model wide), and the FFN's
#: hidden layer HIDDEN_WIDTH whatever d_ff, so a new d_model or d_ff fills the structure its first setting built.
MAP_WIDTH, HIDDEN_WIDTH = 180, 300
#: A map prints its values in its cells up to this many columns (cells of 45 px at `MAP_WIDTH`).
LABELLED_COLUMNS = 4
#: The block's three tokens fill 3 rows of 44 px: the colour legend's length.
ROW_HEIGHT = 44


@part_builder(data=("matrix", "row_labels", "col_labels", "arithmetic", "labelled", "numbered_title"))
def block_map_part(matrix: np.ndarray, *, row_labels: Sequence[str], col_labels: Sequence[str], labelled: bool,
                   title: str = "", numbered_title: str = "", width: int = MAP_WIDTH, x_title: str = "dim",
                   arithmetic: np.ndarray | None = None, arithmetic_label: str = "",
                   stroke_width: float = 1) -> tuple[list[Rows], Make]:
    """One of the block's maps (`heatmap_part`), its structure the same for every d_model and d_ff: `width` pixels
    wide whatever its columns, its values printed or not as data (`labelled`), each cell's `arithmetic` (text, of
    the matrix's shape) in its tooltip under `arithmetic_label`. A title that quotes a number is `numbered_title`,
    read from the data (`title_from_data`)."""
    title_in_data = bool(numbered_title)
    part = heatmap_part(matrix, row_labels=row_labels, col_labels=col_labels, title=numbered_title or title,
                        x_title=x_title,
                        y_title="token", cell_size=ROW_HEIGHT, show_values=labelled, values_in_data=True,
                        value_format=".2f", font_size=10, width=width, legend_length=ROW_HEIGHT * len(row_labels) - 20,
                        title_in_data=title_in_data, stroke_width=stroke_width,
                        extra=None if arithmetic is None else {arithmetic_label: arithmetic})
    return list(part.tables), part.make


#: The block's two halves, each a sub-layer with its residual sum and its norm, in the order of the placement.
HALVES = {"post": (("attention", "add_1", "norm_1"), ("ffn", "add_2", "norm_2")),
          "pre": (("norm_1", "attention", "add_1"), ("norm_2", "ffn", "add_2"))}


def stage_parts(block: BlockSteps, tokens: Sequence[str], gammas: tuple[np.ndarray, np.ndarray],
                betas: tuple[np.ndarray, np.ndarray], titles: Mapping[str, str],
                stages: Sequence[str] | None = None) -> dict[str, Part]:
    """One row of maps per stage of the block, titled `titles[stage]`, by role: "attention", "add_1", "norm_1",
    "ffn", "add_2", "norm_2" (those in `stages`; by default all)."""
    labels = unique_labels(tokens)
    d_model, d_ff = block.input.shape[1], block.ffn.hidden.shape[1]
    dims = [f"d{j}" for j in range(d_model)]
    kw = dict(row_labels=labels, col_labels=dims, labelled=d_model <= LABELLED_COLUMNS)
    attn_in = block.input if block.placement == "post" else block.norm_1.output
    add_2_in = block.norm_1.output if block.placement == "post" else block.residual_1

    def row(name: str, *maps: Part) -> Part:
        return compose(side_by_side, *maps, title=titles[name])

    def add_part(name: str, stream: np.ndarray, update: np.ndarray, total: np.ndarray,
                 names: tuple[str, str, str]) -> Part:
        return row(name, block_map_part(stream, title=names[0], **kw), block_map_part(update, title=names[1], **kw),
                   block_map_part(total, title=names[2], arithmetic=residual_tooltip(stream, update, total),
                                  arithmetic_label="x + a = s", **kw))

    def norm_part(name: str, ln: LayerNormSteps, k: int, ln_name: str) -> Part:
        stats = np.stack([ln.mean, ln.var], axis=1)  # (T, 2): each row's μ and σ²
        return row(name,
                   heatmap_part(stats, row_labels=labels, col_labels=["μ", "σ²"], title=f"{ln_name}: row μ, σ²",
                                x_title="statistic", y_title="token", cell_size=ROW_HEIGHT, value_format=".3f",
                                font_size=10),
                   block_map_part(ln.normalised, title=f"{ln_name}: normalised", arithmetic=norm_tooltip(ln),
                                  arithmetic_label="(x − μ) / √(σ² + ε)", **kw),
                   block_map_part(ln.output, title=f"{ln_name}: γ, β applied",
                                  arithmetic=scale_tooltip(ln, gammas[k], betas[k]), arithmetic_label="γ × z + β",
                                  **kw))

    def ffn_part() -> Part:
        hidden = block_map_part(block.ffn.hidden, row_labels=labels, col_labels=[f"h{j}" for j in range(d_ff)],
                                numbered_title=f"hidden φ(x W₁ + b₁), d_ff = {d_ff}", x_title="hidden unit",
                                width=HIDDEN_WIDTH, labelled=d_ff <= LABELLED_COLUMNS,
                                stroke_width=0.5, arithmetic=ffn_tooltip(block), arithmetic_label="φ(p)")
        return row("ffn", hidden, block_map_part(block.ffn.output, title="FFN = hidden W₂ + b₂", **kw))

    sub = "MHA(x)" if block.placement == "post" else "MHA(LN₁(x))"
    builders = {
        "attention": lambda: row("attention", block_map_part(attn_in, title="attention's input", **kw),
                                 block_map_part(block.attention.concat, title="Concat(heads)", **kw),
                                 block_map_part(block.attention.output, title=f"{sub} = Concat · W_o", **kw)),
        "add_1": lambda: add_part("add_1", block.input, block.attention.output, block.residual_1,
                                  ("x", sub, f"x + {sub}")),
        "norm_1": lambda: norm_part("norm_1", block.norm_1, 0, "LN₁"),
        "ffn": ffn_part,
        "add_2": lambda: add_part("add_2", add_2_in, block.ffn.output, block.residual_2, ("h", "FFN", "h + FFN")),
        "norm_2": lambda: norm_part("norm_2", block.norm_2, 1, "LN₂"),
    }
    return {name: builders[name]() for name in (builders if stages is None else stages)}


def half_spec(block: BlockSteps, k: int, tokens: Sequence[str], gammas: tuple[np.ndarray, np.ndarray],
              betas: tuple[np.ndarray, np.ndarray], titles: Mapping[str, str]) -> dict:
    """Half `k` of the block (`HALVES`) as a Vega-Lite spec: one chart of its three stages' rows (`stage_parts`),
    one under the other. The first half (attention, its residual and the first norm) reads neither the FFN nor
    the activation."""
    half = HALVES[block.placement][k]
    parts = stage_parts(block, tokens, gammas, betas, titles, half)
    return part_spec(compose(one_above_other, *(parts[name] for name in half)))


def block_specs(block: BlockSteps, tokens: Sequence[str], gammas: tuple[np.ndarray, np.ndarray],
                betas: tuple[np.ndarray, np.ndarray], titles: Mapping[str, str]) -> list[dict]:
    """The block's two halves (`half_spec`)."""
    return [half_spec(block, k, tokens, gammas, betas, titles) for k in range(len(HALVES[block.placement]))]


@part_builder(data=("stream", "update", "self_cosine", "token_cosine", "grad_norm"))
def sweep_part(stream: np.ndarray, update: np.ndarray, self_cosine: np.ndarray, token_cosine: np.ndarray,
               grad_norm: np.ndarray, *, n_tokens: int, panel_width: int = 180) -> tuple[list[Rows], Make]:
    """Three panels against depth (a `DepthSweep`'s arrays, for `n_tokens` tokens): the stream's size and each
    block's update (log), the cosines, the gradient reaching each block (log). All three fit a 1280-px projector's
    main area side by side. The depth is data: one structure serves every depth.

    Non-positive sizes (a stream that underflowed to 0) are left out of the log panels as missing values.
    """
    depth = len(grad_norm)
    if self_cosine.shape != (depth + 1, n_tokens):
        raise ValueError(f"self_cosine must be (depth + 1, n_tokens) = ({depth + 1}, {n_tokens}), "
                         f"got {self_cosine.shape}.")
    levels = np.arange(depth + 1)

    def positive(v: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(v) > 0, v, np.nan)

    sizes = Rows({"depth": np.concatenate([levels, levels[1:]]),
                  "series": np.array(["residual stream ‖x‖"] * (depth + 1) + ["block's update ‖Δx‖"] * depth,
                                     dtype=object),
                  "value": positive(np.concatenate([stream, update]))})
    cos_names = [f"token {t + 1} vs its input" for t in range(n_tokens)] + ["between tokens (mean)"]
    cosines = Rows({"depth": np.tile(levels, n_tokens + 1),
                    "series": np.repeat(np.array(cos_names, dtype=object), depth + 1),
                    "value": np.concatenate([self_cosine.T.ravel(), token_cosine])})
    grads = Rows({"block": np.arange(1, depth + 1), "series": np.full(depth, "‖∂L/∂W‖ of the block", dtype=object),
                  "value": positive(grad_norm)})

    def panel(data: alt.InlineData | alt.NamedData, x: str, x_title: str, y_title: str, title: str, log: bool,
              names: list[str]) -> alt.Chart:
        return alt.Chart(data, mark=alt.MarkDef(type="line", point=alt.OverlayMarkDef(size=20), strokeWidth=2),
                         width=panel_width, height=200, title=title).encode(
            x=alt.X(field=x, type="quantitative", title=x_title, axis=alt.Axis(tickMinStep=1)),
            y=alt.Y(field="value", type="quantitative", title=y_title,
                    scale=alt.Scale(type="log") if log else alt.Scale(domain=[-1, 1])),
            color=alt.Color(field="series", type="nominal", title=None, sort=names,
                            scale=alt.Scale(domain=names, range=list(CATEGORY[:len(names)])),
                            legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=280)),
            tooltip=[alt.Tooltip(field="series", type="nominal", title="series"),
                     alt.Tooltip(field=x, type="quantitative", title=x_title),
                     alt.Tooltip(field="value", type="quantitative", title=y_title, format=".3g")])

    def make(data: DataSource) -> alt.HConcatChart:
        return alt.HConcatChart(hconcat=[
            panel(data(), "depth", "after block", "size (log)", "Stream and updates",
                  True, ["residual stream ‖x‖", "block's update ‖Δx‖"]),
            panel(data(), "depth", "after block", "cosine", "What is left of each token", False, cos_names),
            panel(data(), "block", "block", "gradient norm (log)", "Gradient reaching each block", True,
                  ["‖∂L/∂W‖ of the block"]),
        ], spacing=30, resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent")))

    return [sizes, cosines, grads], make


def sweep_spec(sweep: DepthSweep) -> dict:
    """`sweep_part` as a Vega-Lite spec."""
    return part_spec(sweep_part(sweep.stream, sweep.update, sweep.self_cosine, sweep.token_cosine, sweep.grad_norm,
                                n_tokens=sweep.self_cosine.shape[1]))


def permutation_spec(check: PermutationCheck, tokens: Sequence[str], block_d_model: int) -> dict:
    """FFN of the shuffled tokens beside the FFN's output shuffled the same way: the same matrix."""
    kw = dict(row_labels=unique_labels([tokens[i] for i in check.perm]),
              col_labels=[f"d{j}" for j in range(block_d_model)], labelled=block_d_model <= LABELLED_COLUMNS)
    return part_spec(compose(side_by_side, block_map_part(check.of_shuffled, title="FFN(shuffled tokens)", **kw),
                             block_map_part(check.shuffled_output, title="FFN(tokens), shuffled", **kw)))


def diagram_spec(depth: int | None = None) -> dict:
    """The whole model's diagram, its block repeated `depth` times (N when None)."""
    return part_spec(model_diagram_part(f"× {'N' if depth is None else depth} blocks"))
