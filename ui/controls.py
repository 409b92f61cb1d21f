"""Shared Streamlit helpers: URL-bound controls, show-the-code, chart display.

Every control in the app is created here, bound to a URL query parameter
(``bind="query-params"``), so any view can be shared as a link. Streamlit drops
a malformed or out-of-range URL value and falls back to the widget's default.

The query-parameter keys are part of the app's public API (links in slides
depend on them): keep them short and stable, and document new ones in
`QUERY_KEYS`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import altair as alt
import pyarrow as pa
import streamlit as st

from core.embeddings import tokenize
from ui.charts import drawn_on_canvas, for_projector, stable_spec, to_spec, view_title, without_aria
from ui.export import chart_matrix, chart_to_png, chart_to_svg, matrix_titles, matrix_to_csv, matrix_to_latex

# Charts are exported with to_dict() in show_chart; the pages bound their own data sizes.
alt.data_transformers.disable_max_rows()

#: Longest word `tokens_input` accepts: it becomes an axis label.
MAX_WORD_CHARS = 40

#: Every query-parameter key the app uses, and what it controls.
QUERY_KEYS: dict[str, str] = {
    "seed": "random seed of the weight matrices / inputs (0 = the lesson's numbers on the worked example)",
    "token": "selected token (its label)",
    "temp": "softmax temperature of the soft lookup",
    "query": "which query is looked up (soft-lookup page)",
    "seq_len": "sequence length T (number of tokens)",
    "d_k": "width of queries and keys",
    "scaled": "divide the scores by sqrt(d_k) (on/off)",
    "d_model": "embedding width d_model",
    "heads": "number of attention heads (a divisor of d_model)",
    "perm": "a permutation of the token positions, comma-separated (e.g. 2,0,1)",
    "pe": "add positional encoding to the embeddings (on/off)",
    "positions": "number of positions in the positional-encoding table",
    "dims": "embedding dimensions whose curves are drawn",
    "causal": "apply the causal mask (on/off)",
    "step": "generation step t (masked self-attention page)",
    "text": "the sentence typed by the user",
    "src": "source (encoder) sentence",
    "present": "presenter mode: larger chart text for a projector, long explanations hidden (app-wide)",
    "reveal": "the last stage of the worked example shown: X, Q, K, V, raw scores, scaled scores, softmax or output",
    "tokens": "token labels of the worked example, space-separated",
    "check": "open the worked example's PyTorch cross-check (true/false)",
    "X": "the worked example's embedding matrix: rows separated by ';', entries by ','",
    "tgt": "target (decoder) sentence",
    "task": "toy task the tiny Transformer is trained on: reverse, copy, sort or first (training page)",
    "vocab": "vocabulary size: the digits 0 .. vocab-1 (training page)",
    "pos": "positional encoding of the trained model: sinusoidal, learned or none (training page)",
    "layers": "number of Transformer layers of the trained model (training page)",
    "steps": "number of training steps (training page)",
    "lr": "Adam learning rate (training page)",
    "ckpt": "training step of the checkpoint whose attention is shown (training page)",
    "digits": "the user's own input sequence of digits (training page)",
    "layer": "layer of the pretrained model whose head is shown up close (1-based)",
    "head": "head of that layer shown up close (1-based)",
    "max_len": "longest sequence length measured on the cost page",
    "arch": "model whose depth and width size the attention-memory table (cost page)",
}


def _register(key: str) -> None:
    if key not in QUERY_KEYS:
        raise KeyError(f"query key {key!r} is not documented in ui.controls.QUERY_KEYS")


def bound_slider(
    label: str,
    key: str,
    min_value: int | float,
    max_value: int | float,
    default: int | float,
    *,
    step: int | float | None = None,
    help: str | None = None,
    container: Any = st,
) -> Any:
    """A slider whose value lives in the URL under `key`."""
    _register(key)
    return container.slider(
        label, min_value=min_value, max_value=max_value, value=default, step=step,
        key=key, help=help, bind="query-params",
    )


def bound_choice(
    label: str,
    key: str,
    options: Sequence[Any],
    default: Any = None,
    *,
    help: str | None = None,
    format_func: Callable[[Any], str] = str,
    container: Any = st,
) -> Any:
    """A horizontal single choice (radio) whose selection lives in the URL under `key`."""
    _register(key)
    options = list(options)
    index = options.index(default) if default in options else 0
    return container.radio(
        label, options, index=index, key=key, help=help, horizontal=True,
        format_func=format_func, bind="query-params",
    )


def bound_select_slider(
    label: str,
    key: str,
    options: Sequence[Any],
    default: Any,
    *,
    help: str | None = None,
    format_func: Callable[[Any], str] = str,
    container: Any = st,
) -> Any:
    """A slider over a fixed list of options (e.g. powers of two, divisors) bound to the URL under `key`.

    The link holds an option as `format_func` writes it (``?temp=1``); a hand-written equal number
    (``?temp=1.0``, ``?lr=1e-2``) is accepted too.
    """
    _register(key)
    options = list(options)
    value = default
    if key not in st.session_state and (option := _numeric_option(st.query_params.get(key), options, format_func)):
        st.session_state[key] = option[0]
        value = None  # the widget takes its value from the session state set just above
    return container.select_slider(
        label, options=options, value=value, key=key, help=help, format_func=format_func, bind="query-params",
    )


def _numeric_option(raw: str | None, options: list[Any], format_func: Callable[[Any], str]) -> tuple[Any] | None:
    """``(option,)`` when the URL value `raw` is not an option's label but the same number as one, else None."""
    if raw is None or raw in {format_func(o) for o in options}:
        return None
    try:
        number = float(raw)
    except ValueError:
        return None
    for option in options:
        if isinstance(option, int | float) and not isinstance(option, bool) and float(option) == number:
            return (option,)
    return None


def bound_toggle(label: str, key: str, default: bool = False, *, help: str | None = None, container: Any = st) -> bool:
    """An on/off toggle bound to the URL under `key`."""
    _register(key)
    return bool(container.toggle(label, value=default, key=key, help=help, bind="query-params"))


def bound_multiselect(
    label: str,
    key: str,
    options: Sequence[Any],
    default: Sequence[Any],
    *,
    help: str | None = None,
    max_selections: int | None = None,
    container: Any = st,
) -> list[Any]:
    """A multiselect bound to the URL under `key` (values are repeated query parameters)."""
    _register(key)
    return list(container.multiselect(
        label, list(options), default=list(default), key=key, help=help, max_selections=max_selections,
        bind="query-params",
    ))


def tokens_input(
    label: str,
    key: str,
    default: str,
    *,
    max_tokens: int = 16,
    max_chars: int = MAX_WORD_CHARS,
    help: str | None = None,
    container: Any = st,
) -> list[str]:
    """A text box for a whitespace-separated sentence, bound to the URL under `key`.

    Empty input, more than `max_tokens` tokens or a word longer than `max_chars` characters (it would
    not fit on an axis) shows an error and keeps the last valid sentence, so a bad edit never loses the
    view or raises.
    """
    _register(key)
    text = container.text_input(label, value=default, key=key, bind="query-params",
                                help=help or f"Words separated by spaces, at most {max_tokens}.")
    last_key = f"_last_valid_tokens_{key}"
    fallback = st.session_state.get(last_key, tokenize(default))
    tokens = tokenize(text)
    if not tokens:
        container.error(f"{label}: the sentence is empty. Showing the last valid one: “{' '.join(fallback)}”.")
        return list(fallback)
    if len(tokens) > max_tokens:
        container.error(
            f"{label}: {len(tokens)} words is more than the {max_tokens} this page can draw. "
            f"Showing the last valid sentence: “{' '.join(fallback)}”."
        )
        return list(fallback)
    if (longest := max(tokens, key=len)) and len(longest) > max_chars:
        container.error(
            f"{label}: the word “{longest[:20]}…” has {len(longest):,} characters, more than the {max_chars} "
            f"a label can show. Showing the last valid sentence: “{' '.join(fallback)}”."
        )
        return list(fallback)
    st.session_state[last_key] = tokens
    return tokens


def seed_slider(*, max_value: int = 99, container: Any = st, lesson_seed: bool = True) -> int:
    """The app-wide seed slider (``?seed=``); seed 0 reproduces the lesson's numbers."""
    help_text = "Seeds the random matrices. " + (
        "0 reproduces the lesson's printed numbers." if lesson_seed else "Same seed, same numbers."
    )
    seed = bound_slider("Seed", "seed", 0, max_value, 0, help=help_text, container=container)
    if lesson_seed:  # at every seed: the way back to the lesson's numbers stays in view
        container.caption("Seed 0: these are exactly the lesson's numbers." if seed == 0
                          else f"Seed {seed}: other random weights. Seed 0 gives the lesson's numbers.")
    return int(seed)


def fixed_slot() -> Any:
    """A container for elements that come and go with a slider, e.g. ``with fixed_slot(): if odd: st.caption(…)``.

    Streamlit's front end matches a page's elements by position. An element that appears or disappears
    shifts every later one, so each of them is drawn from scratch, charts included (measured on the
    positional-encoding page: 313 -> 173 ms from key press to repaint with its optional caption slotted).
    Inside a container that is always there, the change stays inside it.
    """
    return st.container()


@functools.lru_cache(maxsize=256)
def _source(obj: Callable[..., Any] | type) -> str:
    """`inspect.getsource`, once per object per process (it re-reads and re-parses the file each call)."""
    return inspect.getsource(obj)


def source_key(*objects: Callable[..., Any] | type) -> str:
    """Session-state key of the "Show the code" expander for `objects`: ``code:`` and a short hash of their names.

    Stable across runs and sessions, distinct for each expander of a page, and never part of the URL.
    """
    names = ",".join(f"{obj.__module__}.{obj.__qualname__}" for obj in objects)
    return "code:" + hashlib.sha1(names.encode()).hexdigest()[:8]


def show_source(*objects: Callable[..., Any] | type, title: str = "Show the code") -> None:
    """An expander with the real source of the `core` functions being taught (never a copy).

    The code is sent only while the expander is open (opening it reruns the page's fragment). A closed
    expander's content would still be sent and syntax-highlighted by the browser: on a cold start that
    was about 0.5 s of the landing page's first draw, for code nobody had asked to see yet.
    """
    expander = st.expander(title, icon=":material/code:", key=source_key(*objects), on_change="rerun")
    if not expander.open:
        return
    with expander:
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            st.code(_source(obj), language="python")


def presenter_mode() -> bool:
    """True when the app-wide presenter mode (``?present=true``) is on."""
    return bool(st.session_state.get("present", False))


def explain(markdown: str) -> None:
    """A paragraph of explanation; hidden in presenter mode, where the lecturer says it instead."""
    if not presenter_mode():
        st.markdown(markdown)


def section(title: str, text: str = "", formula: str = "", *, keep_text: bool = False) -> None:
    r"""A section's heading, explanation and display formula, sent as a single Markdown element.

    Three elements would look the same, but the browser pays for each element on every rerun (a few ms
    apiece), and a page with six sections redraws eighteen of them on every slider step. The heading is a
    Markdown ``##`` (what ``st.header`` draws); the formula is KaTeX between ``$$``, as in ``st.latex``.
    As with `explain`, presenter mode leaves the explanation to the lecturer, unless `keep_text` (a page's
    text that stays on the projector too, as ``st.markdown`` would).
    """
    parts = [f"## {title}"]
    if text and (keep_text or not presenter_mode()):
        parts.append(text)
    if formula:
        parts.append(f"$$\n{formula}\n$$")
    st.markdown("\n\n".join(parts))


def arrow_datasets(spec: dict) -> dict:
    """The spec with each inline dataset (a list of row dicts) as a `pyarrow.Table`.

    ``st.vega_lite_chart`` ships every dataset to the browser as Arrow, on every rerun. From a list of
    dicts it goes through a pandas DataFrame (about 4 ms for a chart of three 4 × 4 heatmaps; more than half
    of the worked example's rerun); from an Arrow table it only serialises it (0.4 ms). A dataset Arrow cannot
    type (a column mixing text and numbers) is left to Streamlit's own conversion.
    """
    if not spec.get("datasets"):
        return spec
    datasets = {}
    for name, rows in spec["datasets"].items():
        try:
            datasets[name] = pa.Table.from_pylist(rows) if isinstance(rows, list) else rows
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            datasets[name] = rows
    return {**spec, "datasets": datasets}


def show_chart(chart: alt.TopLevelMixin | dict, *, export: bool = True, **kwargs: Any) -> Any:
    """Draw an Altair chart (or its Vega-Lite spec) at its own width, and offer it in an export menu for slides.

    ``st.altair_chart`` re-validates the whole spec against the Vega-Lite JSON
    schema on every rerun, which costs more than building the chart. The chart
    builders are validated once, by the test suite (``chart.to_dict()``), so
    here the spec is exported unvalidated and handed to ``st.vega_lite_chart``.
    A page may also pass a spec it built (and cached) itself.
    In presenter mode fonts and cells are enlarged (`ui.charts.for_projector`).

    Inside a `page_fragment` the chart joins the fragment's one export menu, drawn after the fragment's
    body; elsewhere it gets a menu of its own, right under it. Unless `export` is False.
    """
    spec = stable_spec(chart) if isinstance(chart, dict) else to_spec(chart)
    if presenter_mode():
        spec = for_projector(spec)
    drawn = without_aria(spec) if drawn_on_canvas(spec) else spec
    result = st.vega_lite_chart(arrow_datasets(drawn), width="content", **kwargs)
    if export:
        pending = getattr(_fragment_state, "exports", None)
        if pending is None:  # not in a `page_fragment`: a menu of its own, under the chart
            export_menu([spec])
        else:  # the fragment draws one menu for all its charts when its body is done
            pending.append(spec)
    return result


def clicked_cell(key: str, shape: tuple[int, ...], param: str = "cell",
                 fields: Sequence[str] = ("i", "j")) -> tuple[int, ...] | None:
    """The cell last clicked on the chart drawn with widget `key`: its `fields` (``(i, j)`` by default).

    The chart has a click selection `param` on those fields (`ui.charts.heatmap(..., select=param)`)
    and is shown with ``on_select="rerun"``. None when nothing is selected, and for a click remembered
    from a larger map that lies outside `shape` now.
    """
    state = st.session_state.get(key)
    try:
        (point,) = state["selection"][param]
        cell = tuple(int(point[f]) for f in fields)
    except (KeyError, TypeError, ValueError):
        return None
    return cell if all(0 <= c < n for c, n in zip(cell, shape, strict=True)) else None


def _slug(text: str) -> str:
    """A file name stem from a title: ``"P A Pᵀ (original, reordered)" -> "p_a_p_original_reordered"``."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80].rstrip("_") or "chart"


def _chart_name(spec: dict) -> str:
    """A chart's name for the export menu: its panels' titles, or its matrices' names (``""`` if it has neither)."""
    views = spec.get("hconcat") or spec.get("vconcat") or spec.get("concat") or [spec]
    titles = [t for v in views if (t := view_title(v, spec.get("datasets", {})))]
    titles = titles or [layout.get("name", "") for layout in spec.get("usermeta", {}).get("matrices", [])]
    return ", ".join(t for t in titles if t)


def export_menu(specs: Sequence[dict], key: str | None = None) -> None:
    """A small popover: pick a file (a chart as PNG or SVG, any matrix in it as CSV or LaTeX), download it.

    One menu for several charts (a `page_fragment` draws one for all of its charts), made of one select box
    and one download button however many files it offers. Every element costs the browser something on
    every slider step: a menu under each chart cost the worked example, with five charts, about 15 ms of each
    step (key press to repaint, alternating runs) over no menu at all; a button per file and format had
    cost another 3 ms per chart. The matrices are listed from their titles alone (`ui.export.matrix_titles`);
    every file is made only when the button is clicked (a deferred callable), so the menu costs a rerun
    almost nothing. The two widgets exist only while the popover is open (opening it reruns the app);
    closed, the menu is a single button. Changing the choice reruns the app; the popover stays open.

    `key` names the popover (``<key>_open`` in session state); by default it is made from the charts' names
    and specs without data. A menu's select box and button are keyed by the files it offers, so a chart that
    changed shape offers its new files from the start.
    """
    names = [_chart_name(spec) for spec in specs]
    if key is None:
        skeletons = json.dumps([{k: v for k, v in spec.items() if k != "datasets"} for spec in specs],
                               sort_keys=True, default=str)
        key = f"export_{_slug('_'.join(names))}_{hashlib.md5(skeletons.encode()).hexdigest()[:8]}"
    # (option label, chart index, matrix index or None for the whole chart, file extension)
    choices: list[tuple[str, int, int | None, str]] = []
    for c, (spec, name) in enumerate(zip(specs, names, strict=True)):
        chart = "Chart" if len(specs) == 1 else (name or f"Chart {c + 1}")
        choices += [(f"{chart} · PNG image", c, None, "png"), (f"{chart} · SVG drawing", c, None, "svg")]
        for k, title in enumerate(matrix_titles(spec)):
            choices += [(f"{title} · CSV", c, k, "csv"), (f"{title} · LaTeX bmatrix", c, k, "tex")]
    # No hover help on the button: a tooltip wrapper per chart cost the browser ~25 ms of every slider step on the
    # worked example (interleaved A/B), and the menu's own select box explains the files.
    label = "Export" if len(specs) == 1 else "Export charts and matrices"
    menu = st.popover(label, icon=":material/download:", key=f"{key}_open", on_change="rerun")
    with menu:
        if not menu.open:  # sent only while open: a closed menu's two widgets cost the browser ~5 ms every step
            return
        files = hashlib.md5("\n".join(label for label, *_ in choices).encode()).hexdigest()[:8]
        choice = st.selectbox(
            # Wide enough for a chart's titles and the format after them: the popover grows to fit it.
            "File", range(len(choices)), format_func=lambda i: choices[i][0], key=f"{key}_{files}_file", width=620,
            help="A chart as an image (PNG at twice the screen resolution, or SVG), or one of its matrices "
                 "as CSV (full precision, with row and column labels) or as a LaTeX bmatrix (3 decimals).",
        )
        _, c, k, ext = choices[choice]
        mime = {"png": "image/png", "svg": "image/svg+xml", "csv": "text/csv", "tex": "text/x-tex"}[ext]
        if k is None:
            data = functools.partial(chart_to_png if ext == "png" else chart_to_svg, specs[c])
            file_name = f"{_slug(names[c])}.{ext}"
        else:
            data = functools.partial(_matrix_file, specs[c], k, ext)
            file_name = f"{_slug(matrix_titles(specs[c])[k])}.{ext}"
        st.download_button(file_name, data=data, file_name=file_name, mime=mime, key=f"{key}_{files}_download",
                           on_click="ignore", icon=":material/download:")


def matrix_downloads(title: str, matrix: Any, row_labels: Sequence[str], col_labels: Sequence[str]) -> None:
    """CSV and LaTeX downloads of a matrix too large to travel inside its chart (drawn as one image).

    The files are made only when a button is clicked, like the Export menu's.
    """
    slug = _slug(title)
    with st.container(horizontal=True):
        st.download_button(f"{title} as CSV", data=functools.partial(matrix_to_csv, matrix, row_labels, col_labels),
                           file_name=f"{slug}.csv", mime="text/csv", key=f"matrix_{slug}_csv", on_click="ignore",
                           icon=":material/table:")
        st.download_button(f"{title} as LaTeX", data=functools.partial(matrix_to_latex, matrix),
                           file_name=f"{slug}.tex", mime="text/x-tex", key=f"matrix_{slug}_tex", on_click="ignore",
                           icon=":material/functions:")


def _matrix_file(spec: dict, k: int, kind: str) -> str:
    """The `k`-th matrix of a chart spec (`ui.export.chart_matrices` order) as CSV (``"csv"``) or LaTeX (``"tex"``).

    Run when its download button is clicked.
    """
    _, matrix, rows, cols = chart_matrix(spec, k)
    return matrix_to_csv(matrix, rows, cols) if kind == "csv" else matrix_to_latex(matrix)


def _matches(url_value: str | list[str], widget_value: Any) -> bool:
    """Whether a raw URL value is what the bound widget ended up holding."""
    if isinstance(widget_value, list | tuple):  # a multiselect: one value in the link is a list of one
        values = url_value if isinstance(url_value, list) else [url_value]
        return [str(v) for v in widget_value] == values
    if isinstance(url_value, list):
        return False
    if isinstance(widget_value, bool):
        return url_value.lower() == str(widget_value).lower()
    if isinstance(widget_value, int | float):
        try:
            return float(url_value) == float(widget_value)
        except ValueError:
            return False
    return url_value == str(widget_value)


def ignored_query_params(incoming: dict[str, str | list[str]]) -> dict[str, str]:
    """URL values the page could not use, mapped to the value it used instead.

    Call after the page has run: every bound widget has then either taken its
    value from the URL or rejected it (malformed, out of range, not an option)
    and fallen back to its default.
    """
    ignored = {}
    for key, raw in incoming.items():
        if key not in QUERY_KEYS or key not in st.session_state:
            continue
        value = st.session_state[key]
        if not _matches(raw, value):
            ignored[key] = value
    return ignored


#: Session-state key of the sidebar slot that shows the share link. The router fills it in on every full run
#: (`link_slot`); a page's fragment writes the link into it (`page_fragment`). Not in the URL; nor is
#: ``copy_link``, the key of the link's Copy button (`show_share_link`).
LINK_SLOT = "_link_slot"


def link_slot() -> None:
    """Reserve the share link's place here (the router calls it in the sidebar); the page's fragment fills it."""
    st.session_state[LINK_SLOT] = st.empty()


# The share link: its text, written by the server, and a Copy button drawn by a components-v2 element.
# `st.code` (the obvious choice, with its own copy button) makes the browser load and run its syntax
# highlighter, a 1.5 MB script: about 0.5 s of the landing page's first draw on this machine, for one line
# of plain text. The button's element never changes (no data): one whose data changed with the link was
# redrawn on every slider step, about 50 ms each (measured on the worked example). It copies the address
# bar, which holds the same link (Streamlit keeps the URL's query in step with the bound widgets; the
# browser tests check both).
_COPY_LINK_HTML = '<button type="button" title="Copy the link to this view">Copy link</button>'
_COPY_LINK_CSS = """
button { font: inherit; font-size: 0.8rem; padding: 0.15rem 0.6rem; cursor: pointer; border-radius: 0.4rem;
         border: 1px solid var(--st-border-color, #d0d4da); background: var(--st-background-color, #fff);
         color: var(--st-text-color, inherit); }
button:hover { border-color: var(--st-primary-color, #1f5fa8); color: var(--st-primary-color, #1f5fa8); }
"""
_COPY_LINK_JS = """
export default function ({ parentElement }) {
  const button = parentElement.querySelector("button");
  button.onclick = async () => {
    const link = window.location.href;
    try {
      await navigator.clipboard.writeText(link);  // only in a secure context (https or localhost)
    } catch (err) {  // plain http on a lecture-hall network: copy through a selected text area
      const area = document.createElement("textarea");
      area.value = link;
      parentElement.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy link"; }, 1500);
  };
}
"""
_copy_link_button = st.components.v2.component("copy_link", html=_COPY_LINK_HTML, css=_COPY_LINK_CSS,
                                               js=_COPY_LINK_JS)


def show_share_link() -> None:
    """Write the link to the current view into the slot the router reserved (nothing when there is none)."""
    slot = st.session_state.get(LINK_SLOT)
    if slot is None:
        return
    with slot.container():
        link = share_link(st.context.url)  # a real browser always has an address; AppTest has none
        st.markdown(f"`{link}`" if link else "")
        _copy_link_button(key="copy_link")


#: The running script's `page_fragment` s (each session's script runs in its own thread): ``depth``, how deep
#: it is in nested ones, and ``exports``, the specs the innermost has drawn for its export menu (None outside).
_fragment_state = threading.local()


def page_fragment(body: Callable[..., None]) -> Callable[..., None]:
    """Run a page's live part as a fragment: a change to one of its widgets reruns only `body`.

    Use it on everything of a page below its title and introduction::

        @page_fragment
        def live() -> None:
            seed = seed_slider()
            ...

        live()

    A full run redraws the router's navigation and sidebar too, and the browser spends about 40 ms of
    every slider step on them (measured on the worked-example and multi-head pages). A fragment rerun
    sends only `body`'s elements. The one app-wide element that follows the page's widgets, the share
    link in the sidebar, is written by the fragment itself, after `body`, so it is never a step behind.
    Widgets outside the fragment (presenter mode, in the sidebar) still rerun the whole app.

    Fragments nest: a section whose widgets change nothing above or below it can be a `page_fragment`
    of its own, called from the page's with what it needs (a rerun of it alone reuses those arguments).
    Its widgets then rerun only that section. The link is written by the outermost fragment of a run:
    the page's on a page step, the section's when the section reruns alone.

    Every chart `show_chart` draws in `body` is offered in one export menu, drawn after `body` (one
    element on every step instead of one per chart; see `export_menu`). A nested fragment's charts are
    in its own menu, which reruns with them.
    """

    @st.fragment
    @functools.wraps(body)
    def run(*args: Any, **kwargs: Any) -> None:
        depth = getattr(_fragment_state, "depth", 0)  # fragments of this script run already entered
        outer_exports = getattr(_fragment_state, "exports", None)
        slot = st.session_state.get(LINK_SLOT)
        if depth > 0 and slot is not None:
            # Streamlit lets a fragment rerun write outside its body only where it wrote on the last bigger run.
            # The outer fragment overwrites this placeholder with the link when it finishes.
            slot.empty()
        _fragment_state.depth, _fragment_state.exports = depth + 1, []
        try:
            body(*args, **kwargs)
            if _fragment_state.exports:  # its own charts only: a nested fragment has its own menu
                export_menu(_fragment_state.exports, key=f"export_{body.__name__}")
        finally:  # also after st.stop() in the body, so the link is always there
            _fragment_state.depth, _fragment_state.exports = depth, outer_exports
            if depth == 0:
                show_share_link()

    return run


def share_link(base_url: str | None) -> str:
    """A link to exactly this view: the page's address plus every bound control's current value."""
    params = {k: v for k, v in query_snapshot().items() if k in QUERY_KEYS}
    query = urllib.parse.urlencode(params, doseq=True)
    return (base_url or "") + (f"?{query}" if query else "")


def query_snapshot() -> dict[str, str | list[str]]:
    """The URL's query parameters right now (repeated keys as lists)."""
    snap: dict[str, str | list[str]] = {}
    for key in st.query_params:
        values = st.query_params.get_all(key)
        snap[key] = values if len(values) > 1 else values[0]
    return snap


def bound_stepper(label: str, key: str, options: Sequence[Any], default: Any, *, help: str | None = None) -> Any:
    """Previous / Next buttons around a select slider bound to the URL: step through stages one at a time."""
    _register(key)
    options = list(options)

    def move(delta: int) -> None:
        current = st.session_state.get(key, default)
        i = options.index(current) if current in options else options.index(default)
        st.session_state[key] = options[min(max(i + delta, 0), len(options) - 1)]

    prev_col, slider_col, next_col = st.columns([1, 6, 1], vertical_alignment="bottom")
    prev_col.button("Previous", key=f"{key}_prev", on_click=move, args=(-1,), icon=":material/chevron_left:",
                    help="Reveal one stage less", width="stretch")
    next_col.button("Next", key=f"{key}_next", on_click=move, args=(1,), icon=":material/chevron_right:",
                    help="Reveal the next stage", width="stretch")
    with slider_col:
        return bound_select_slider(label, key, options, default, help=help)
