"""The class poll's chart: how many students picked each option of a round (`poll.Counts`).

Pure (counts in, `Part` out). Until the lecturer reveals, every bar has one colour: the chart must not give the
answer away on the projector. After the reveal the computed answer's bar is marked. The options, the counts and
which bar is right are data; the structure depends on the number of options only.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np

from ui.charts.inline_data import Rows
from ui.charts.palette import BLUE, GREEN
from ui.charts.template import DataSource, Make, chart_of, part_builder

#: Bar colours: an answer not yet revealed (or a wrong one, once revealed) and the revealed right answer.
BAR_COLOR, RIGHT_COLOR = BLUE, GREEN


def answers_chart(*args, **options) -> alt.LayerChart:
    """`answers_part` as an Altair chart, its data inline."""
    return chart_of(answers_part(*args, **options))


@part_builder(data=("options", "votes", "answer"))
def answers_part(options: Sequence[str], votes: Sequence[int], answer: str | None = None, *,
                 n_options: int, width: int = 420) -> tuple[list[Rows], Make]:
    """One horizontal bar per option, in the question's order, its length the number of votes for it.

    `answer` is None until the reveal: then no bar is marked. `n_options` (= ``len(options)``) sizes the chart.
    """
    if not len(options) == len(votes) == n_options:
        raise ValueError(f"need one count per option ({n_options} options), got {len(options)} and {len(votes)}.")
    counts = np.asarray(votes, dtype=np.int64)
    table = Rows({
        "option": np.asarray([str(o) for o in options], dtype=object),
        "order": np.arange(n_options),
        "votes": counts,
        # The share of the class, for the tooltip: 0 when nobody answered yet.
        "share": counts / max(int(counts.sum()), 1),
        "right": np.asarray([answer is not None and o == answer for o in options]),
    })

    def make(data: DataSource) -> alt.LayerChart:
        base = alt.Chart(data()).encode(
            y=alt.Y("option:N", sort=alt.EncodingSortField("order"), title=None, axis=alt.Axis(labelLimit=260)),
            x=alt.X("votes:Q", title="answers", axis=alt.Axis(tickMinStep=1), scale=alt.Scale(domainMin=0)),
        )
        bars = base.mark_bar().encode(
            color=alt.condition("datum.right", alt.value(RIGHT_COLOR), alt.value(BAR_COLOR)),
            tooltip=[alt.Tooltip("option:N"), alt.Tooltip("votes:Q", title="answers"),
                     alt.Tooltip("share:Q", title="share of the class", format=".0%")],
        )
        labels = base.mark_text(align="left", dx=4).encode(text="votes:Q")
        # A fixed band per option (a step), so the bars keep their height whatever the chart's autosize does.
        return alt.layer(bars, labels).properties(width=width, height=alt.Step(36), title="The class's answers")

    return [table], make
