"""The sidebar's page list: the router's own sections and pages drawn as links, a correct list for screen readers.

Streamlit's own sidebar navigation puts each section's heading and items in a <div> directly inside its <ul>, which
screen readers announce as a broken list. The router hides it (``st.navigation(..., position="hidden")``) and calls
`page_links` with the same sections it routes, so a page added to the router gets its link with nothing else to
edit. Each section is a heading and an ``st.page_link`` per page (a page switch inside the session, as Streamlit's
navigation does; the current page drawn shaded and bold). A small script gives the links what Streamlit's list
gave them: a navigation landmark named "Pages", a list per section named by its heading, one item per link, and
``aria-current="page"`` on the current page's link.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from ui.accessibility import CAPTION_COLOR

#: Key of the container holding every link (its class is ``st-key-`` and the key).
NAV_KEY = "page_nav"
#: Key prefix of a section's container; the current page's link is the one container keyed `CURRENT_KEY`.
SECTION_KEY_PREFIX = "page_nav_section_"
CURRENT_KEY = "page_nav_current"

#: Drawn as Streamlit's navigation was: small section headings in the caption grey (`ui.accessibility`), and a
#: row of 30 px per link (a tap target well over WCAG 2.5.8's 24 px).
_STYLE = f"""
<style>
.st-key-{NAV_KEY} h2 {{
  font-size: 0.875rem; font-weight: 400; color: {CAPTION_COLOR}; padding: 1rem 0 0.25rem 0; margin: 0;
}}
.st-key-{NAV_KEY} [data-testid="stVerticalBlock"] {{ gap: 0; }}
.st-key-{NAV_KEY} a[data-testid="stPageLink-NavLink"] {{ min-height: 1.875rem; }}
</style>
"""

# Run by the browser on every full run of the router; the observer and the click handler are installed once per tab.
_SCRIPT = """
<script>
(() => {
  if (window.__pageNav) { window.__pageNav(); return; }
  const [NAV, SECTION, CURRENT] = %s;
  const mark = () => {
    const nav = document.querySelector('.st-key-' + NAV);
    if (!nav) return;
    nav.setAttribute('role', 'navigation');
    nav.setAttribute('aria-label', 'App pages');  // the name Streamlit's own navigation had
    for (const section of nav.querySelectorAll(`[class*="st-key-${SECTION}"]`)) {
      const heading = section.parentElement.previousElementSibling?.querySelector('h2');
      section.setAttribute('role', 'list');
      if (heading) {
        heading.id = [...section.classList].find((c) => c.startsWith('st-key-')) + '-heading';
        section.setAttribute('aria-labelledby', heading.id);
      }
      for (const item of section.children) item.setAttribute('role', 'listitem');
    }
    for (const link of nav.querySelectorAll('a[data-testid="stPageLink-NavLink"]')) {
      if (link.closest('.st-key-' + CURRENT)) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
      // The landing page's path is empty, which a browser reads as "this page": opened in a new tab or copied,
      // its link must lead to the app's root.
      if (link.getAttribute('href') === '') link.setAttribute('href', './');
    }
  };
  let queued = false;
  window.__pageNav = () => {
    if (!queued) { queued = true; requestAnimationFrame(() => { queued = false; mark(); }); }
  };
  // Streamlit redraws the links on a page change; our own attributes are not watched, so marking cannot loop.
  new MutationObserver(window.__pageNav).observe(document.body, {childList: true, subtree: true});
  // Where the open sidebar covers the page (a phone), following a link closes it, as Streamlit's navigation did.
  document.addEventListener('click', (event) => {
    if (!event.target.closest?.(`.st-key-${NAV} a`)) return;
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const main = document.querySelector('[data-testid="stMain"]');
    if (sidebar && main && sidebar.getBoundingClientRect().right > main.getBoundingClientRect().left + 1) {
      document.querySelector('[data-testid="stSidebarCollapseButton"] button')?.click();
    }
  });
  window.__pageNav();
})();
</script>
"""


def section_key(section: str) -> str:
    """The container key of a section: `SECTION_KEY_PREFIX` and its heading in lower case, words joined by ``_``."""
    return SECTION_KEY_PREFIX + "_".join(re.findall(r"\w+", section.lower()))


def page_links(sections: Mapping[str, Sequence[StreamlitPage]], current: StreamlitPage) -> None:
    """Each section's heading, then a link to each of its pages in the router's order; `current` marked."""
    with st.container(key=NAV_KEY):
        for section, pages in sections.items():
            st.markdown(f"## {section}")
            with st.container(key=section_key(section)):
                for page in pages:
                    with st.container(key=CURRENT_KEY if page == current else None):
                        st.page_link(page)
    st.html(_STYLE + _SCRIPT % json.dumps([NAV_KEY, SECTION_KEY_PREFIX, CURRENT_KEY]), unsafe_allow_javascript=True)
