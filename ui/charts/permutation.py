"""The permutation page's charts: the input and its reordering, their attention maps, and the outputs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.permutation import PermutationCheck
from ui.charts.facets import matrix_panels_part
from ui.charts.heatmap import unique_labels
from ui.charts.template import part_spec


def page_specs(check: PermutationCheck, tokens: Sequence[str]) -> dict[str, dict]:
    """Every chart of the page as a Vega-Lite spec: the two inputs ("inputs"), the maps averaged over the heads
    ("maps") and the two outputs ("outputs").

    A word keeps its label wherever it moves (``unique_labels`` numbers repeated words by their
    original position), so cells can be compared by label across the panels.
    """
    add_pe = check.add_pe
    labels = unique_labels(tokens)
    perm_labels = [labels[p] for p in check.perm]
    dims = [str(j) for j in range(check.x.shape[1])]
    in_kw = dict(x_title="dim", y_title="token", cell_size=26, value_format=".1f", font_size=11)
    map_cell = int(np.clip(620 / (3 * len(tokens)), 12, 40))  # three maps, their labels and a legend in about 950 px
    charts = {
        "inputs": matrix_panels_part([("X + PE" if add_pe else "X", check.x, labels, dims),
                                 ("PX + PE" if add_pe else "PX", check.x_perm, perm_labels, dims)], **in_kw),
        "maps": matrix_panels_part(
            [("A (original)", check.weights.mean(axis=0), labels, labels),
             ("A of the shuffled input", check.weights_perm.mean(axis=0), perm_labels, perm_labels),
             ("P A Pᵀ (original, reordered)", check.weights_expected.mean(axis=0), perm_labels, perm_labels)],
            signed=False, x_title="key token", y_title="query token", cell_size=map_cell,
            show_values=map_cell >= 30, font_size=11,  # 11 px, the smallest chart text (ui.charts.spec)
        ),
        "outputs": matrix_panels_part([("Attn(X)", check.output, labels, dims),
                                  ("Pᵀ Attn(PX), rows moved back", check.output_unpermuted, labels, dims)], **in_kw),
    }
    return {name: part_spec(chart) for name, chart in charts.items()}
