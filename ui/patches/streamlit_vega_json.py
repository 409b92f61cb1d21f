"""A chart's spec written as JSON once per structure, not once per step.

``st.vega_lite_chart`` sends a chart's datasets as Arrow and the rest of its spec as JSON text: on every call it
writes the spec with ``json.dumps``, then ``_stabilize_vega_json_spec`` reads that text back with ``json.loads``,
renames Altair's counted view and parameter names with regular expressions, and writes it again. The app's
charts keep their structure apart from their data (`ui.charts.template`, `ui.display.show_chart`): a new setting
of a chart of a known shape is the same structure objects with new datasets, which Streamlit moves out of the
spec before writing it. So a slider step wrote and parsed the same text again for every chart it drew.

The patch remembers both results, for the `MAX_ENTRIES` specs written last:

* ``json.dumps(spec)`` of a dict, called without options, by the identities of the dict's top-level values (the
  entry holds those values, so their identities cannot be reused while it is kept). The app never changes a
  structure once built (`ui.charts.template.STRUCTURES`); the one change Streamlit makes to a spec's own
  values, a null legend title set to ``" "`` (``_patch_null_legend_titles``), is made before the writing and
  gives the same result the next time. Any other call goes to ``json`` itself.
* ``_stabilize_vega_json_spec(text)`` by the text: a function of its text alone.

Written for Streamlit 1.67.0, where the writing is ``_stabilize_vega_json_spec(json.dumps(spec))`` in
``VegaChartsMixin._vega_lite_chart`` and ``json`` is the module's name for the standard library's module. The
tests compare the chart messages with Streamlit's own.
"""

from __future__ import annotations

import json
from typing import Any

from ui.patches import Patch
from ui.remembered import Remembered

#: How many specs' texts are kept (each a chart structure's JSON, a few to some tens of kilobytes).
MAX_ENTRIES = 128


_WRITTEN = Remembered(MAX_ENTRIES)
_STABILIZED = Remembered(MAX_ENTRIES)


class SpecJson:
    """What ``vega_charts`` calls ``json``: the standard library's module, with ``dumps`` of a spec remembered."""

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)

    @staticmethod
    def dumps(obj: Any, **options: Any) -> str:
        if options or type(obj) is not dict:
            return json.dumps(obj, **options)
        values = tuple(obj.values())
        key = tuple((k, id(v)) for k, v in obj.items())
        return _WRITTEN.get(key, values, lambda: json.dumps(obj))


def stabilize_vega_json_spec(vega_spec: str) -> str:
    """``_stabilize_vega_json_spec``: Streamlit's own result for this text, remembered."""
    return _STABILIZED.get(vega_spec, None, lambda: PATCH.original("_stabilize_vega_json_spec")(vega_spec))


def forget() -> None:
    """Drop every remembered text (tests)."""
    _WRITTEN.clear()
    _STABILIZED.clear()


PATCH = Patch(name="streamlit_vega_json", library="streamlit", version="1.67.0",
              module="streamlit.elements.vega_charts",
              replacements={"json": SpecJson(), "_stabilize_vega_json_spec": stabilize_vega_json_spec})
