"""The app's UI layer: chart builders (`ui.charts`, pure Altair) and Streamlit helpers by job.

`ui.url_state`: controls bound to the URL; `ui.layout`: a page's fragment, text, code and share link;
`ui.display`: drawing charts and the export menu.
"""
