"""Formulas written the ways the pages write them, two of them broken: what `devtools.browser.katex_errors` finds."""

import streamlit as st

st.title("Formulas")
st.latex(r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")  # st.latex, as ui.layout.introduction
st.markdown(r"Inline, $\sqrt{d_k} \approx 8$, in a sentence.")
st.latex(r"\frac{QK^\top}{")  # a parse error: KaTeX's error element
st.markdown("## A section\n\nIts text.\n\n$$\n\\softmx(QK^\\top)\n$$")  # ui.layout.section's form; undefined command
