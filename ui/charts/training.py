"""Chart builders for the training page: loss/accuracy curves and a grid of attention maps.

Pure functions (no Streamlit), tested through ``chart.to_dict()``. Colours follow
`ui.charts.heatmap`: attention weights use viridis on a fixed [0, 1] domain, so maps from
different checkpoints, layers and heads can be compared by eye.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from ui.charts.heatmap import SEQUENTIAL_SCHEME, heatmap
from ui.charts.palette import ink
from ui.export import LAYOUT_KEY, matrix_layout

if TYPE_CHECKING:  # the result's module imports PyTorch; a chart only reads its arrays
    from training.trainer import TrainingResult

#: Cells smaller than this (pixels) get no printed values (only tooltips).
MIN_LABELLED_CELL = 26
#: Attention maps per row of the grid.
MAPS_PER_ROW = 4


def position_labels(tokens: Sequence[int]) -> list[str]:
    """Axis labels ``"position:token"`` (``[5, 9] -> ["0:5", "1:9"]``): unique even when tokens repeat."""
    return [f"{t}:{tok}" for t, tok in enumerate(tokens)]


def curves_frame(steps: Sequence[int], series: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Long-form table with columns ``step``, ``curve``, ``value``: one row per (curve, step)."""
    steps = np.asarray(steps)
    frames = []
    for name, values in series.items():
        values = np.asarray(values, dtype=np.float64)
        if values.shape != steps.shape:
            raise ValueError(f"curve {name!r} has {values.shape} values for {steps.shape} steps.")
        frames.append(pd.DataFrame({"step": steps, "curve": name, "value": values}))
    if not frames:
        raise ValueError("curves_frame needs at least one curve.")
    return pd.concat(frames, ignore_index=True)


def _panel(df: pd.DataFrame, *, title: str, y_title: str, domain: tuple[float, float] | None, log_y: bool,
           marker_step: int | None, level: float | None, level_label: str, width: int, height: int,
           y_format: str) -> alt.LayerChart:
    """One panel: a line per curve, plus optional rules (a reference level, the checkpoint shown).

    Built from constructors, not chained ``.encode()`` calls: Altair deep-copies a chart on every
    chained call.
    """
    scale = alt.Scale(type="log") if log_y else alt.Scale(domain=list(domain)) if domain else alt.Undefined
    x = alt.X(field="step", type="quantitative", title="training step")
    lines = alt.Chart(
        data=df,
        mark=alt.MarkDef(type="line", point=alt.OverlayMarkDef(size=18), strokeWidth=2),
        encoding=alt.FacetedEncoding(
            x=x,
            y=alt.Y(field="value", type="quantitative", title=y_title, scale=scale),
            color=alt.Color(field="curve", type="nominal", title=None, scale=alt.Scale(scheme="tableau10"),
                            legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=300)),
            tooltip=[alt.Tooltip(field="curve", type="nominal", title="curve"),
                     alt.Tooltip(field="step", type="quantitative", title="step"),
                     alt.Tooltip(field="value", type="quantitative", title=y_title, format=y_format)],
        ),
    )
    layers: list[alt.Chart] = [lines]
    if level is not None:
        layers.append(alt.Chart(
            data=pd.DataFrame({"level": [level], "label": [level_label]}),
            mark=alt.MarkDef(type="rule", strokeDash=[4, 4], color="gray"),
            encoding=alt.FacetedEncoding(y=alt.Y(field="level", type="quantitative"),
                                         tooltip=[alt.Tooltip(field="label", type="nominal", title="reference")]),
        ))
    if marker_step is not None:
        layers.append(alt.Chart(
            data=pd.DataFrame({"step": [marker_step]}),
            mark=alt.MarkDef(type="rule", color="black", strokeWidth=1.5),
            encoding=alt.FacetedEncoding(
                x=alt.X(field="step", type="quantitative"),
                tooltip=[alt.Tooltip(field="step", type="quantitative", title="checkpoint shown")]),
        ))
    return alt.LayerChart(layer=layers, title=title, width=width, height=height)


def training_curves(
    loss: pd.DataFrame,
    accuracy: pd.DataFrame,
    *,
    marker_step: int | None = None,
    chance: float | None = None,
    width: int = 380,
    height: int = 220,
) -> alt.HConcatChart:
    """Loss (log scale) and accuracy ([0, 1]) against the training step, side by side.

    Args:
        loss, accuracy: `curves_frame` tables.
        marker_step: draw a vertical rule at this step (the checkpoint being shown).
        chance: draw a dashed horizontal rule at this accuracy (guessing uniformly).
    """
    loss_panel = _panel(loss, title="Loss (cross-entropy)", y_title="loss", domain=None, log_y=True,
                        marker_step=marker_step, level=None, level_label="", width=width, height=height,
                        y_format=".3f")
    acc_panel = _panel(accuracy, title="Accuracy on held-out sequences", y_title="accuracy", domain=(0.0, 1.0),
                       log_y=False, marker_step=marker_step, level=chance,
                       level_label=f"chance: {chance:.3f}" if chance is not None else "", width=width,
                       height=height, y_format=".1%")
    return alt.HConcatChart(hconcat=[loss_panel, acc_panel], spacing=40,
                            resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent")))


def attention_grid(
    maps: np.ndarray,
    tokens: Sequence[int],
    *,
    cell_size: int = 26,
    per_row: int = MAPS_PER_ROW,
) -> alt.FacetChart:
    """Every layer's and head's attention map, ``maps`` of shape ``(n_layers, H, T, T)``, as one faceted chart.

    One panel per (layer, head), titled ``"layer l · head h"``; each layer starts a new row
    (wrapped after `per_row` heads). All panels share one viridis scale on [0, 1]; rows are
    the query positions, columns the key positions, labelled ``"position:token"``.

    A single facet, built with one constructor call, costs the same for 1 or 16 maps
    (a concatenation of 16 `ui.charts.heatmap` charts costs a chart per map: docs/performance.md).
    """
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 4 or maps.shape[-1] != maps.shape[-2] or maps.shape[-1] != len(tokens):
        raise ValueError(f"attention_grid needs maps of shape (n_layers, H, T, T) with T = {len(tokens)} tokens, "
                         f"got {maps.shape}.")
    n_layers, n_heads, t, _ = maps.shape
    labels = position_labels(tokens)
    panels = [f"layer {layer + 1} · head {h + 1}" for layer in range(n_layers) for h in range(n_heads)]
    df = _grid_frame(maps, panels, labels)
    # Axis at the bottom: on top it would sit above the panel headers, apart from its own panel.
    x = alt.X(field="col", type="ordinal", sort=labels, title="key (position:token)",
              axis=alt.Axis(labelAngle=0, orient="bottom"))
    y = alt.Y(field="row", type="ordinal", sort=labels, title="query (position:token)")
    tooltip = [alt.Tooltip(field="panel", type="nominal", title="map"),
               alt.Tooltip(field="row", type="nominal", title="query"),
               alt.Tooltip(field="col", type="nominal", title="key"),
               alt.Tooltip(field="value", type="quantitative", title="weight", format=".3f")]
    color = alt.Color(field="value", type="quantitative", title=None,
                      scale=alt.Scale(scheme=SEQUENTIAL_SCHEME, domain=[0.0, 1.0]),
                      legend=alt.Legend(orient="right", gradientLength=max(80, t * cell_size)))
    rect = alt.Chart(mark=alt.MarkDef(type="rect", stroke="white", strokeWidth=1 if cell_size >= 12 else 0),
                     encoding=alt.FacetedEncoding(color=color))
    layers = [rect]
    if cell_size >= MIN_LABELLED_CELL:
        layers.append(alt.Chart(mark=alt.MarkDef(type="text", fontSize=10), encoding=alt.FacetedEncoding(
            text=alt.Text(field="value", type="quantitative", format=".2f"),
            fill=alt.Fill(field="ink", type="nominal", scale=None, legend=None),  # the colours themselves
        )))
    cells = alt.LayerChart(layer=layers, encoding=alt.SharedEncoding(x=x, y=y, tooltip=tooltip),
                           width=alt.Step(cell_size), height=alt.Step(cell_size))
    facet = alt.FacetFieldDef(field="panel", type="ordinal", sort=panels, title=None,
                              header=alt.Header(labelFontSize=13, labelFontWeight="bold", labelPadding=4))
    # every panel is a matrix of "Show the numbers" and the export menu: df's rows are maps.ravel()'s cells
    layout = matrix_layout(maps.reshape(-1, t, t).shape, panels, labels, labels, name="attention maps")
    return alt.FacetChart(data=df, facet=facet, spec=cells, columns=min(n_heads, per_row),
                          spacing={"row": 16, "column": 24}, usermeta={LAYOUT_KEY: [layout]})


def _grid_frame(maps: np.ndarray, panels: list[str], labels: list[str]) -> pd.DataFrame:
    """One row per cell of `maps` ``(n_layers, H, T, T)``, in its order: the panel, the query's and key's labels and
    positions, the weight and the text colour that reads on it."""
    n_layers, n_heads, t, _ = maps.shape
    p, i, j = np.unravel_index(np.arange(maps.size), (n_layers * n_heads, t, t))
    values = maps.ravel()
    return pd.DataFrame({
        "panel": np.asarray(panels, dtype=object)[p],
        "row": np.asarray(labels, dtype=object)[i],
        "col": np.asarray(labels, dtype=object)[j],
        "q": i,  # not "i"/"j": this table holds many matrices, not one `ui.charts.heatmap` matrix
        "k": j,
        "value": values,
        "ink": ink(SEQUENTIAL_SCHEME, values),  # black or white, whichever reads better on the cell
    })


def probabilities_map(probs: np.ndarray, tokens: Sequence[int], *, cell_size: int = 30) -> alt.LayerChart:
    """The model's output distribution, ``probs`` ``(T, vocab)``: one row per position, one column per digit."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != len(tokens):
        raise ValueError(f"probabilities_map needs probs of shape (T, vocab) with T = {len(tokens)}, "
                         f"got {probs.shape}.")
    return heatmap(probs, row_labels=position_labels(tokens), col_labels=[str(d) for d in range(probs.shape[1])],
                   signed=False, title="predicted probability of each output digit", x_title="output digit",
                   y_title="position:input token", value_format=".2f", cell_size=cell_size, font_size=10,
                   show_values=cell_size >= MIN_LABELLED_CELL)


def map_cell_size(seq_len: int) -> int:
    """Cell size (px) of the attention maps for `seq_len` positions."""
    return int(np.clip(230 // seq_len, 14, 34))


def learning_curves(result: TrainingResult, marker_step: int | None = None) -> alt.HConcatChart:
    """The run's loss (training batches and held-out) and held-out accuracy, with a rule at `marker_step`."""
    steps, batch_loss = result.windowed_train_loss()
    loss = pd.concat([curves_frame(steps, {"training batches": batch_loss}),
                      curves_frame(result.checkpoint_steps, {"held-out": result.eval_loss})], ignore_index=True)
    accuracy = curves_frame(result.checkpoint_steps, {"per token": result.eval_accuracy,
                                                      "whole sequence right": result.eval_sequence_accuracy})
    return training_curves(loss, accuracy, marker_step=marker_step, chance=1.0 / result.config.vocab)

