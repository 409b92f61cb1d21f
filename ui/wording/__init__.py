"""Sentences that quote a number or a trend, computed from the data the page shows (no Streamlit).

One module per page that needs it, named after the page. A page explains in fixed words what is always true (a
theorem, a definition) and calls these functions for anything that depends on the settings: a value, a
direction ("rises", "falls"), whether a pattern is there at all. Each function takes the page's `core` result
and returns the sentence; the page's tests move its settings and check every such sentence against `core`.
"""
