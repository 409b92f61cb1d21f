"""The exercise's class round in a chart: how many students' latest result is each mistake, largest first.

Pure (labels and counts in, `Part` out). The labels are the checker's one-line explanations; the labels and counts
are data, so the structure depends on the number of bars only. Each label is written above its bar, wrapped to at
most `LABEL_LINES` lines, so the chart is no wider than its bars and fits a phone.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import altair as alt
import numpy as np

from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE
from ui.charts.template import DataSource, Make, chart_of, part_builder

#: Characters a label's line holds: the checker's longest line (about 80 characters) in two lines as wide as the chart.
LABEL_CHARS = 40
LABEL_LINES = 2
#: Vertical px of one mistake: its label's lines above its bar.
ROW_PX = 64
BAR_PX = 14
#: Where a bar sits in its mistake's band (0 its top, 1 its bottom): below its label's lines.
BAR_AT = 0.76


def wrapped(label: str) -> str:
    """`label` in lines of at most `LABEL_CHARS` characters, broken at spaces, joined by newlines (at most
    `LABEL_LINES` lines: a longer label's last line ends in an ellipsis; the tooltip holds it whole)."""
    return "\n".join(textwrap.wrap(label, LABEL_CHARS, max_lines=LABEL_LINES, placeholder=" …")) or label


def mistakes_chart(*args, **options) -> alt.LayerChart:
    """`mistakes_part` as an Altair chart, its data inline."""
    return chart_of(mistakes_part(*args, **options))


@part_builder(data=("labels", "counts"))
def mistakes_part(labels: Sequence[str], counts: Sequence[int], *, n_bars: int, width: int = 200) -> tuple[
        list[Rows], Make]:
    """One horizontal bar per mistake, in the order given (largest first), its length the number of students whose
    latest result it is. `n_bars` (= ``len(labels)``) sizes the chart."""
    if not len(labels) == len(counts) == n_bars:
        raise ValueError(f"need one count per mistake ({n_bars} bars), got {len(labels)} and {len(counts)}.")
    students = np.asarray(counts, dtype=np.int64)
    table = Rows({
        "mistake": np.asarray([str(label) for label in labels], dtype=object),
        "lines": np.asarray([wrapped(str(label)) for label in labels], dtype=object),
        "order": np.arange(n_bars),
        "students": students,
    })

    def make(data: DataSource) -> alt.LayerChart:
        def row(at: float) -> alt.Y:  # `at`: where in the mistake's band, 0 its top, 1 its bottom
            return alt.Y("mistake:N", sort=alt.EncodingSortField("order"), title=None, axis=None, bandPosition=at)

        count = alt.X("students:Q", title="students", scale=alt.Scale(domainMin=0),
                      axis=alt.Axis(tickMinStep=1, grid=False))
        base = alt.Chart(data())
        # the label's lines from the band's top, the bar (a thick rule from 0) in its lower part
        bars = base.mark_rule(color=BLUE, strokeWidth=BAR_PX).encode(
            y=row(BAR_AT), x=count, x2=alt.datum(0), tooltip=[alt.Tooltip("mistake:N"), alt.Tooltip("students:Q")])
        numbers = base.mark_text(align="left", dx=4).encode(y=row(BAR_AT), x=count, text="students:Q")
        names = base.mark_text(align="left", baseline="top", lineBreak="\n", x=0, dy=4).encode(
            y=row(0), text="lines:N")
        return alt.layer(numbers, bars, names).properties(width=width, height=alt.Step(ROW_PX),
                                                          title="The room's mistakes now")

    return [table], make
