"""A page whose script pauses after its title, as a cold first run does while it builds charts."""

import time

import streamlit as st

st.title("Slow first run")
time.sleep(1.5)  # longer than two of `settle`'s text checks (200 ms apart): the page looks finished, but is not
st.markdown("All drawn.")
