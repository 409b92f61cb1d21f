"""The app's UI layer: chart builders (`ui.charts`, pure Altair) and Streamlit helpers by job.

`ui.url_state`: controls bound to the URL; `ui.layout`: a page's fragment, text, code and share link;
`ui.display`: drawing charts (and `prepare_altair`, the Altair set-up the router applies) and the export menu;
`ui.export`: charts and matrices as PNG, SVG, CSV and LaTeX; `ui.quiz`: predict-then-reveal questions;
`ui.warmup`: importing the first page's modules before the first visitor arrives; `ui.patches`: every patch of
another library's private code, each guarded by the library's version, installed once by the router.
"""
