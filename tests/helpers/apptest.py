"""Helpers for AppTest-based page tests: open a page with query parameters, read its charts."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

from ui.cache import clear_shared_caches
from ui.charts.spec import view_title

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")
TIMEOUT = 60


def run_page(page: str | None = None, **query: str) -> AppTest:
    """Run the app on `page` (e.g. ``"app_pages/multi_head.py"``; None = the default page) with a query string."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if page is not None:
        at.switch_page(page)
    at.query_params.update({k: str(v) for k, v in query.items()})
    return at.run()


def open_code(at: AppTest, label: str | None = None) -> AppTest:
    """Open the page's "Show the code" expanders (`ui.layout.show_source`), or the one titled `label`, and rerun.

    Their code is only sent while they are open. An expander widget's element id ends in its key.
    """
    keys = [e.proto.id.split("-", 2)[-1] for e in at.expander if label in (None, e.label)]
    keys = [k for k in keys if k.startswith("code:")]
    assert keys, f"no code expander{f' titled {label!r}' if label else ''} on this page"
    for key in keys:
        at.session_state[key] = True
    return at.run()


def share_links(at: AppTest) -> list[str]:
    """The links the sidebar shows right above its Copy button (`ui.layout.link_slot`): normally exactly one."""
    def blocks(node):
        yield node
        for child in getattr(node, "children", {}).values():
            if hasattr(child, "children"):
                yield from blocks(child)

    def is_copy_button(element) -> bool:
        return getattr(getattr(element, "proto", None), "component_name", "") == "copy_link"

    def markdown_in(element) -> list[str]:  # a fragment's write outside its body comes in a wrapper block
        if type(element).__name__ == "Markdown":
            return [element.value]
        kids = list(getattr(element, "children", {}).values())
        return markdown_in(kids[0]) if len(kids) == 1 else []

    links = []
    for block in blocks(at.sidebar):
        kids = list(block.children.values())
        links += [text.strip("`") for above, kid in itertools.pairwise(kids) if is_copy_button(kid)
                  for text in markdown_in(above)]
    return links


def share_link(at: AppTest) -> str:
    """The one link the sidebar's copy-link box holds."""
    (link,) = share_links(at)
    return link


def section_titles(at: AppTest) -> list[str]:
    """The page's section headings in order: ``st.header`` elements and the ``## `` line `ui.layout.section` starts
    its Markdown with."""
    titles = []
    for el in at.main:
        if el.type == "header":
            titles.append(el.value)
        elif el.type == "markdown" and el.value.startswith("## "):
            titles.append(el.value.split("\n", 1)[0][3:])
    return titles


def markdown_tables(at: AppTest) -> list[pd.DataFrame]:
    """Every Markdown table on the page (`ui.layout.static_table`), as the text of its cells."""
    tables = []
    for element in at.markdown:
        lines = element.value.strip().splitlines()
        if len(lines) < 2 or not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[1].replace(" ", "")):
            continue
        rows = [[c.strip().replace("\\", "") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]] for line in lines]
        tables.append(pd.DataFrame(rows[2:], columns=rows[0]))
    return tables


def chart_specs(at: AppTest) -> list[tuple[dict, dict[str, pd.DataFrame]]]:
    """Every Vega-Lite chart on the page as ``(spec, {dataset name: DataFrame})``."""
    out = []
    for el in at.get("vega_lite_chart"):
        frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in el.proto.datasets}
        out.append((json.loads(el.proto.spec), frames))
    return out


def charts_built_anew(page: str) -> list[tuple[dict, dict[str, str]]]:
    """Every chart a run of `page` (e.g. ``"multi_head"``) draws, as ``(spec, {dataset name: its JSON})``, built
    anew: the shared caches are cleared before and after, so no spec built under other settings is reused. Fails on
    a run that raised (it would draw no charts, whatever the code under test does)."""
    clear_shared_caches()
    try:
        at = run_page(f"app_pages/{page}.py")
        assert not at.exception, [e.message for e in at.exception]
        return [(spec, {name: frame.to_json() for name, frame in frames.items()}) for spec, frames in chart_specs(at)]
    finally:
        clear_shared_caches()


def views(spec: dict) -> list[dict]:
    """A chart's views that are not concatenations themselves (those of a row, of a column of rows, …), in order."""
    subs = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat")
    return [leaf for sub in subs for leaf in views(sub)] if subs else [spec]


def heatmaps(at: AppTest) -> dict[str, np.ndarray]:
    """Every `ui.charts.heatmap` on the page (also inside a concatenation, nested or not), keyed by title, as a
    matrix."""
    found: dict[str, np.ndarray] = {}
    for spec, frames in chart_specs(at):
        for sub in views(spec):
            if "layer" not in sub or "data" not in sub:
                continue
            df = frames[sub["data"]["name"]]
            if not {"i", "j", "value"} <= set(df.columns):
                continue
            n_rows, n_cols = int(df["i"].max()) + 1, int(df["j"].max()) + 1
            found[view_title(sub, frames)] = df.sort_values(["i", "j"])["value"].to_numpy().reshape(n_rows, n_cols)
    return found


def heatmap_tooltips(at: AppTest, title: str) -> dict[str, np.ndarray]:
    """The tooltip lines of the `ui.charts.heatmap` titled `title`: line title -> its values as a (rows, cols) array."""
    for spec, frames in chart_specs(at):
        for sub in views(spec):
            if view_title(sub, frames) == title:
                df = frames[sub["data"]["name"]].sort_values(["i", "j"])
                shape = (int(df["i"].max()) + 1, int(df["j"].max()) + 1)
                return {t["title"]: df[t["field"]].to_numpy().reshape(shape) for t in sub["encoding"]["tooltip"]}
    raise AssertionError(f"no heatmap titled {title!r}")


def facet_arrays(at: AppTest) -> list[tuple[dict, dict[str, str], np.ndarray]]:
    """Every `ui.charts.facets` chart on the page: ``(view spec, calculated fields, values as an array)``.

    The data holds the values only, row-major; the array's shape is read from the index transforms
    (``floor((datum._n - 1) / stride) % size``), in order.
    """
    found = []
    for spec, frames in chart_specs(at):
        for view in spec.get("hconcat", [spec]):
            calc = {t["as"]: t["calculate"] for t in view.get("transform", []) if "calculate" in t}
            if "data" not in view or not any("datum._n" in e for e in calc.values()):
                continue
            shape = [int(re.search(r"% (\d+)$", e).group(1)) for e in calc.values() if "datum._n" in e]
            values = frames[view["data"]["name"]]["value"].to_numpy()
            found.append((view, calc, values.reshape(shape)))
    return found
