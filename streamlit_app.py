"""Attention, interactively: the router and the app-wide sidebar. Nothing else lives here.

`streamlit run streamlit_app.py` uses this file twice. It first imports it as a module, finds `app` (an `st.App`)
and serves it; that start-up imports the first page's libraries while the browser is still loading Streamlit's
front end (`ui.warmup.lifespan`). Every visitor's run then executes the file as a script (`__name__` is
``"__main__"``), which draws the router and the sidebar (`main`).
"""

import streamlit as st

from ui.warmup import import_in_background, lifespan


def main() -> None:
    """The router and the app-wide sidebar: one visitor's run of the app."""
    # Imported here, not at the top: the server's own import of this file must stay light (see `ui.warmup`).
    from ui.display import prepare_altair
    from ui.patches import install
    from ui.url_state import ignored_query_params, opened_link

    st.set_page_config(page_title="Attention, interactively", page_icon="🧮", layout="wide")
    install()  # the library patches: applied by the process's first run, a lookup afterwards
    prepare_altair()

    sections = page_sections()
    # Streamlit's own page list is not a correct list for screen readers: the sidebar draws the same sections.
    page = st.navigation(sections, position="hidden")
    incoming = opened_link()  # before any widget runs: what the link asked for
    sidebar(sections, page)

    notices = st.container()
    page.run()

    # Written on full runs only: a page's later steps rerun just its fragment, so the notice says what the page
    # opened with.
    for key, used in ignored_query_params(incoming).items():
        notices.info(f"The link's value for `{key}` could not be used here, so the page opened with `{used}` instead.",
                     icon=":material/link_off:")

    # Most pages cross-check against PyTorch, which takes seconds to import: load it in the background, starting
    # a few seconds after the first page was sent, so the browser draws that page first (docs/performance.md).
    import_in_background("torch", "core.reference", delay_s=3.0)


def page_sections() -> dict[str, list[st.Page]]:
    """Every page of the app, by the sidebar's section, each section in the order a student reads it."""
    # In the lesson's order, the worked example first: it is the landing page ("/"), and the first link of the
    # sidebar is the page a visitor lands on. The encoder/decoder split comes before the mask, which the lesson
    # introduces inside the decoder.
    lesson = [
        st.Page("app_pages/worked_example.py", title="Worked example", icon=":material/calculate:", default=True),
        st.Page("app_pages/soft_lookup.py", title="Attention as a soft lookup", icon=":material/search:"),
        st.Page("app_pages/scaled_attention.py", title="Scaling by √d_k", icon=":material/tune:"),
        st.Page("app_pages/multi_head.py", title="Multi-head attention", icon=":material/view_column:"),
        st.Page("app_pages/permutation.py", title="Order and permutation", icon=":material/shuffle:"),
        st.Page("app_pages/positional_encoding.py", title="Positional encoding", icon=":material/waves:"),
        st.Page("app_pages/cross_attention.py", title="Encoder, decoder, cross-attention",
                icon=":material/swap_horiz:"),
        st.Page("app_pages/masked_attention.py", title="Masked self-attention", icon=":material/visibility_off:"),
        st.Page("app_pages/transformer_block.py", title="The whole Transformer block", icon=":material/layers:"),
    ]
    build = [
        st.Page("app_pages/exercise.py", title="Build this: the exercise", icon=":material/code:"),
    ]
    beyond = [
        st.Page("app_pages/training.py", title="Watch attention learn", icon=":material/model_training:"),
        st.Page("app_pages/pretrained.py", title="A real model's attention", icon=":material/psychology:"),
        st.Page("app_pages/attention_cost.py", title="What attention costs", icon=":material/speed:"),
        st.Page("app_pages/decoder.py", title="A decoder that writes", icon=":material/edit_note:"),
    ]
    return {"The lesson": lesson, "Build this": build, "Beyond the lesson": beyond}


def sidebar(sections: dict[str, list[st.Page]], page: st.Page) -> None:
    """The app-wide sidebar: the page links, the app's name, presenter mode and the share link's slot."""
    from ui.accessibility import scroll_boxes
    from ui.layout import link_slot
    from ui.navigation import page_links
    from ui.url_state import bound_toggle

    with st.sidebar:
        page_links(sections, current=page)
        st.divider()
        st.title("Attention, interactively")
        st.caption("The Transformer's attention mechanism, one concept per page, every number computed live.")
        bound_toggle("Presenter mode", "present", help="Larger chart text and cell values for a projector; "
                     "long explanations are hidden. Part of the link, so slides can open straight into it.")
        st.caption("Copy link to this view")
        link_slot()  # filled in by the page (`ui.layout.page_fragment`), so it follows the page's own reruns
        scroll_boxes()  # a chart or formula wider than a phone scrolls in its own box, never the page


if __name__ == "__main__":  # a visitor's run
    main()
else:  # `streamlit run` importing the file to serve it
    from starlette.middleware import Middleware

    from ui.immutable_files import ImmutableFiles
    from ui.poll_watch import poll_routes

    app = st.App(__file__, lifespan=lifespan, routes=poll_routes(), middleware=[Middleware(ImmutableFiles)])
