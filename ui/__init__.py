"""The app's UI layer: chart builders (`ui.charts`, pure Altair) and Streamlit helpers (`ui.controls`)."""
