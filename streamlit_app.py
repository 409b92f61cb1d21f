"""Attention, interactively: the router and the app-wide sidebar. Nothing else lives here."""

import streamlit as st

st.set_page_config(page_title="Attention, interactively", page_icon=":material/hub:", layout="wide")

PAGES = [
    st.Page("pages/worked_example.py", title="Worked example", icon=":material/calculate:", default=True),
]

page = st.navigation(PAGES)

with st.sidebar:
    st.title("Attention, interactively")
    st.caption("The Transformer's attention mechanism, one concept per page, every number computed live.")
    st.markdown(
        "Follows the lesson *Transformers* (AI Roadmap, stage 4): attention as a soft lookup, "
        "Q/K/V, the worked example, scaling, multi-head attention, positional encoding, masking."
    )

page.run()
