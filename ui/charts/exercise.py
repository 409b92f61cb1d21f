"""The exercise page's chart: a student's numbers on the worked example beside the right ones."""

from __future__ import annotations

import numpy as np

from exercise.cases import WorkedAnswers
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap
from ui.charts.spec import to_spec


def results_spec(worked_output: np.ndarray | None, causal_weights: np.ndarray | None,
                 answers: WorkedAnswers) -> dict | None:
    """The student's causal weights next to the expected ones; without weights, their worked-example output next
    to the lesson's. A Vega-Lite spec, or None when neither has the right shape."""
    labels = list(answers.tokens)
    if causal_weights is not None and causal_weights.shape == answers.causal_weights.shape:
        kw = dict(row_labels=labels, col_labels=labels, x_title="key token", y_title="query token", signed=False)
        return to_spec(side_by_side(heatmap(causal_weights, title="your causal weights", **kw),
                                    heatmap(answers.causal_weights, title="expected causal weights", **kw)))
    if worked_output is not None and worked_output.shape == answers.output.shape:
        dims = [f"d{j}" for j in range(answers.output.shape[1])]
        largest = float(np.nanmax(np.abs(np.concatenate([answers.output, worked_output])))) or 1.0
        kw = dict(row_labels=labels, col_labels=dims, x_title="dim", y_title="token", domain=(-largest, largest))
        return to_spec(side_by_side(heatmap(worked_output, title="your worked-example output", **kw),
                                    heatmap(answers.output, title="the lesson's output", **kw), shared_color=True))
    return None
