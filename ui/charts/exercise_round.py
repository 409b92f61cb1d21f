"""The exercise's class round in a chart: how many students' latest result is each mistake, largest first.

Pure (labels and counts in, `Part` out). The labels are the checker's one-line explanations; the labels and counts
are data, so the structure depends on the number of bars only.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE
from ui.charts.template import DataSource, Make, chart_of, part_builder


def mistakes_chart(*args, **options) -> alt.LayerChart:
    """`mistakes_part` as an Altair chart, its data inline."""
    return chart_of(mistakes_part(*args, **options))


@part_builder(data=("labels", "counts"))
def mistakes_part(labels: Sequence[str], counts: Sequence[int], *, n_bars: int, width: int = 320) -> tuple[
        list[Rows], Make]:
    """One horizontal bar per mistake, in the order given (largest first), its length the number of students whose
    latest result it is. `n_bars` (= ``len(labels)``) sizes the chart."""
    if not len(labels) == len(counts) == n_bars:
        raise ValueError(f"need one count per mistake ({n_bars} bars), got {len(labels)} and {len(counts)}.")
    students = np.asarray(counts, dtype=np.int64)
    table = Rows({
        "mistake": np.asarray([str(label) for label in labels], dtype=object),
        "order": np.arange(n_bars),
        "students": students,
    })

    def make(data: DataSource) -> alt.LayerChart:
        base = alt.Chart(data()).encode(
            y=alt.Y("mistake:N", sort=alt.EncodingSortField("order"), title=None,
                    axis=alt.Axis(labelLimit=440)),
            x=alt.X("students:Q", title="students", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(domainMin=0)),
        )
        bars = base.mark_bar(color=BLUE).encode(
            tooltip=[alt.Tooltip("mistake:N"), alt.Tooltip("students:Q")])
        labels_ = base.mark_text(align="left", dx=4).encode(text="students:Q")
        return alt.layer(bars, labels_).properties(width=width, height=alt.Step(36),
                                                   title="What the room's code gets wrong now")

    return [table], make
