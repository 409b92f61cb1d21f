"""What makes every page usable on a phone and by keyboard, installed once by the router: `scroll_boxes`.

A chart (drawn at its own width), a display formula or a table may be wider than a phone's screen. It must
never make the page wider (then the whole page scrolls sideways and the rest of it slides off the screen): it
scrolls inside its own box instead. One style rule makes each of them scroll on its own; a small script
gives each box that actually overflows what a keyboard and a screen reader need to use it (WCAG 2.1.1 and
4.1.2): ``tabindex="0"`` (arrow keys then scroll it) and a name (a chart has its own, its alt text, and a
table is one; a formula becomes a region named "Formula"). The script watches the page for boxes that come
and go (a fragment rerun adds them without a full run of the router) and for resizes (a phone turned
sideways), and sets or removes the attributes.
"""

from __future__ import annotations

import json

import streamlit as st

from ui.poll_watch import WATCH_KEY_PREFIX

#: The boxes that scroll on their own: each chart (Streamlit's vega-embed element, its canvas or SVG inside),
#: each display formula (KaTeX), each Markdown table (`ui.layout.static_table`) and each ``st.table``'s scroller
#: (`ui.numbers_tables`).
SCROLL_BOX_SELECTOR = ('[data-testid="stVegaLiteChart"], .katex-display, [data-testid="stMarkdownContainer"] table, '
                       '[data-testid="stTable"] > div')

#: The colour of `st.caption` text. Streamlit draws captions in its text colour at 60 % opacity, #76797c on white:
#: a contrast of 4.4:1, under the 4.5:1 WCAG 1.4.3 asks of small text. This grey has 6.0:1 on white and 5.5:1 on
#: the sidebar's background (`tests/ui/test_accessibility.py` computes both from the theme).
CAPTION_COLOR = "#5f6368"

#: The keyboard focus outline: the theme's primary colour (`.streamlit/config.toml`).
FOCUS_COLOR = "#1f5fa8"

#: Every box fits its column; what is wider scrolls inside it. A visible (thin) scrollbar shows that it does.
_STYLE = f"""
<style>
{SCROLL_BOX_SELECTOR} {{
  max-width: 100%; overflow-x: auto; overflow-y: hidden; scrollbar-width: thin;
}}
.katex-display {{ padding: 0.2rem 0; }}
[data-testid="stMarkdownContainer"] table {{ display: block; }}
[data-testid="stCaptionContainer"] {{ color: {CAPTION_COLOR}; opacity: 1; }}
/* A locked choice stays readable: Streamlit draws a disabled widget's label and options at 40 % of the text
   colour (2.6:1). A quiz after its reveal and the class poll after its lock keep their question on screen. */
[data-testid="stWidgetLabel"][disabled] p, [data-testid="stRadioOption"][data-disabled] p {{
  color: {CAPTION_COLOR};
}}
/* Keyboard focus is always visible (WCAG 2.4.7): an outline in the primary colour (6.6:1 on the page, 6.1:1 on the
   sidebar) on whatever has it, a scroll box included. Streamlit draws none on some elements (the page links). */
:focus-visible {{ outline: 2px solid {FOCUS_COLOR} !important; outline-offset: 2px; }}
/* A chart's toolbar (Show data, Download, Fullscreen) shows while the mouse is over the chart; it shows while the
   keyboard is on one of its buttons too, not only the invisible button's outline. */
[data-testid="stElementToolbar"]:focus-within {{ opacity: 1 !important; }}
/* A heading's link icon shows while the mouse is over the heading; it shows while the keyboard is on it too. */
[data-testid="stHeaderActionElements"]:focus-within, [data-testid="stHeaderActionElements"] a:focus-visible {{
  opacity: 1 !important; visibility: visible !important;
}}
/* A switch, a checkbox or a radio option hides its input, and a data grid draws its cells on a canvas that clips
   an outline: the outline goes round what is drawn for them. */
label:has(input:focus-visible), [data-testid="stDataFrame"]:has(canvas:focus-visible) {{
  outline: 2px solid {FOCUS_COLOR}; outline-offset: 2px; border-radius: 4px;
}}
/* Tap targets of at least 24 x 24 px (WCAG 2.5.8): the help icons, a multiselect's remove and open buttons,
   a password field's show/hide button. */
[data-testid="stTooltipHoverTarget"] > button[aria-label^="Help"] {{
  min-width: 24px; min-height: 24px; display: inline-flex; align-items: center; justify-content: center;
}}
[data-testid="stMultiSelectTagsContainer"] button[aria-label^="Remove"] {{
  min-width: 24px; min-height: 24px; margin: -8px -6px -8px -4px;
}}
button[aria-haspopup="listbox"][aria-label="Open"] {{ min-width: 24px; min-height: 24px; }}
/* The show/hide button of a password field (the class poll's presenter key). */
[data-testid="stTextInput"] button {{ min-width: 24px; min-height: 24px; }}
/* The class poll's watcher (`ui.poll_watch`) draws nothing, so it takes no place in the layout; nor does the
   student's poll fragment holding only it (no round open), whose empty box would add a gap to the quiz. */
[class*="st-key-{WATCH_KEY_PREFIX}"],
:has(> [data-testid="stVerticalBlock"] > [class*="st-key-{WATCH_KEY_PREFIX}"]:only-child) {{ display: none; }}
</style>
"""

# Run by the browser on every full run of the router; the observer is installed once per browser tab.
_SCRIPT = """
<script>
(() => {
  if (window.__scrollBoxes) { window.__scrollBoxes(); return; }
  const SELECTOR = %s;
  // A chart keeps its own role and name (Streamlit's, from its alt text) and a Markdown table its own; a
  // formula or an st.table's scroller becomes a named region.
  const extra = (box) => box.matches('.katex-display')
    ? [['role', 'region'], ['aria-label', 'Formula, scrolls sideways']]
    : box.matches('[data-testid="stTable"] > div') ? [['role', 'region'], ['aria-label', 'Table, scrolls sideways']]
    : [];
  const mark = () => {
    for (const box of document.querySelectorAll(SELECTOR)) {
      const wide = box.scrollWidth > box.clientWidth + 1;
      const marked = box.getAttribute('data-a11y-scroll') !== null;
      if (wide && !marked) {
        for (const [a, v] of [['data-a11y-scroll', ''], ['tabindex', '0'], ...extra(box)]) box.setAttribute(a, v);
      } else if (!wide && marked) {
        for (const [a] of [['data-a11y-scroll'], ['tabindex'], ...extra(box)]) box.removeAttribute(a);
      }
    }
  };
  let queued = false;
  const soon = () => { if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; mark(); }); } };
  window.__scrollBoxes = soon;
  // A box can become wider than the screen with no element added: a chart's canvas resized (its width, height
  // or style), or a formula's fonts arriving late. Our own attributes are not watched, so marking cannot loop.
  new MutationObserver(soon).observe(document.body, {childList: true, subtree: true, attributes: true,
                                                     attributeFilter: ['width', 'height', 'style']});
  document.fonts.addEventListener('loadingdone', soon);
  window.addEventListener('resize', soon);
  soon();
})();
</script>
"""


def scroll_boxes() -> None:
    """Make every chart, display formula and table scroll inside its own box, reachable by keyboard when it does;
    and make the small controls Streamlit draws (help icons, a multiselect's buttons) 24 px tap targets.

    Called by the router in the sidebar, where the (invisible) element takes no room on the page.
    """
    st.html(_STYLE + _SCRIPT % json.dumps(SCROLL_BOX_SELECTOR), unsafe_allow_javascript=True)
