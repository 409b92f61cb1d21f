"""Chart builders: pure functions, data in, Altair chart or Vega-Lite spec out. No Streamlit.

One module per page, named after it (`ui.charts.multi_head` draws `app_pages/multi_head.py`), taking the
page's `core` result; and the building blocks the pages share: `heatmap` (a matrix as coloured cells, and the
colour conventions), `arrange` (charts side by side or in a grid), `facets` (one panel per head), `raster` (a
big matrix as one image), `tooltips` (the arithmetic behind a cell), `spec` (a chart's spec as the app sends
it: stable across slider steps, enlarged for a projector), `template` (a chart as a part, its structure built once
per shape) and `inline_data` (a chart's table kept as columns, `Rows`). What replaces Altair's private code is in
`ui.patches`.
"""
