"""Putting charts side by side or in a grid, as one chart (one Vega view for the browser to update)."""

from __future__ import annotations

import altair as alt

from ui.charts.spec import CANVAS


def independent_colours(independent: bool = True) -> alt.Resolve:
    """``resolve`` for a layered or composed chart: each part its own colour scale, or one shared by all."""
    return alt.Resolve(scale=alt.ScaleResolveMap(color="independent" if independent else "shared"))


def side_by_side(*charts: alt.TopLevelMixin, shared_color: bool = False, spacing: int = 28,
                 title: str | None = None) -> alt.HConcatChart:
    """Charts in one row; one `st.altair_chart` call instead of several (each call costs a validation).

    With ``shared_color=True`` all panels use one colour scale, so equal colours mean equal values. `title`: the
    row's own, above its charts' titles.
    """
    return alt.HConcatChart(hconcat=list(charts), spacing=spacing, resolve=independent_colours(not shared_color),
                            title=alt.Undefined if title is None else alt.TitleParams(title, anchor="start"))


def one_above_other(*charts: alt.TopLevelMixin, shared_color: bool = False, spacing: int = 28) -> alt.VConcatChart:
    """Charts in one column, as `side_by_side` puts them in one row."""
    return alt.VConcatChart(vconcat=list(charts), spacing=spacing, resolve=independent_colours(not shared_color))


def grid(*charts: alt.TopLevelMixin, columns: int, shared_color: bool = False, spacing: int = 28) -> alt.ConcatChart:
    """Charts in rows of `columns`, as one chart: one Vega view for the browser to update instead of one per row.

    The browser updates each view separately on every slider step, so one view for a whole grid (W_q, W_k, W_v
    above Q, K, V on the worked example) is cheaper than one per row. Colour scales are independent unless
    ``shared_color=True``, as in `side_by_side`. A grid holds many cells, so it is drawn on a canvas (`CANVAS`).
    """
    # One constructor call: each chained `.resolve_scale()` or `.properties()` deep-copies every map.
    return alt.ConcatChart(concat=list(charts), columns=columns, spacing=spacing, usermeta=CANVAS,
                           resolve=independent_colours(not shared_color))
