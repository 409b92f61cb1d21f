"""The "Show the numbers" tables under a page's charts: every matrix a chart shows only as colour, as a table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from ui.export import chart_matrix, matrix_titles, series_tables, tooltip_tables


def numbers_tables(specs: Sequence[dict], key: str) -> None:
    """A "Show the numbers" expander with every matrix of the charts in `specs` as a real table.

    The numbers a chart shows only as colour or in a tooltip, reachable by keyboard and read by a screen reader
    cell by cell, with their row and column labels (WCAG 1.1.1 and 2.1.1): each matrix, then each step of the
    arithmetic its tooltip shows (`ui.export.tooltip_tables`). Sent only while the expander is open
    (opening it reruns the fragment), like the code (`ui.layout.show_source`): closed, it is one element.
    """
    if not any(matrix_titles(spec) or series_tables(spec) for spec in specs):  # nothing a table can list
        return
    expander = st.expander("Show the numbers", icon=":material/table:", key=key, on_change="rerun")
    if not expander.open:
        return
    with expander:
        for spec in specs:
            for k in range(len(matrix_titles(spec))):
                title, matrix, rows, cols = chart_matrix(spec, k)
                st.markdown(f"**{title}** ({matrix.shape[0]} × {matrix.shape[1]})")
                st.table(pd.DataFrame(np.round(matrix, 3), index=rows, columns=cols))
            for title, steps in tooltip_tables(spec):  # what a cell's tooltip shows, without a mouse
                st.markdown(f"**{title}**, cell by cell ({steps.shape[0]} × {steps.shape[1]})")
                st.table(steps)
            for title, table in series_tables(spec):
                values = table()
                st.markdown(f"**{title}** ({len(values)} rows)")
                st.table(values)
