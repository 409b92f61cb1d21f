"""Every control of the app, bound to the URL, so that any view can be shared as a link.

Each control is created under a documented query-parameter key with Streamlit's
``bind="query-params"``: its starting value comes from the link, and every change is written back
to the URL. Streamlit drops a malformed or out-of-range value and falls back to the default;
`ignored_query_params` tells the router which link values were replaced, and `share_link` builds
the link to exactly this view.

The keys are part of the app's public API (links in slides depend on them): keep them short and
stable, and document new ones in `QUERY_KEYS`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.embeddings import tokenize

#: Longest word `tokens_input` accepts: it becomes an axis label.
MAX_WORD_CHARS = 40


#: Every query-parameter key the app uses, and what it controls.
QUERY_KEYS: dict[str, str] = {
    "seed": "random seed of the weight matrices / inputs (0 = the lesson's numbers on the worked example)",
    "token": "selected token (its label)",
    "temp": "softmax temperature (the soft lookup; the decoder's sampling, where 0 is greedy)",
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
    "weights": "the worked example's weight matrices: random (the lesson's recipe, from the seed), designed (each "
               "query asks for a kind of word) or previous word (each word asks for the word before it)",
    "reveal": "the last stage of the worked example shown: X, Q, K, V, raw scores, scaled scores, softmax or output",
    "tokens": "token labels of the worked example, space-separated",
    "check": "open the worked example's PyTorch cross-check (true/false)",
    "X": "the worked example's embedding matrix: rows separated by ';', entries by ','",
    "tgt": "target (decoder) sentence",
    "task": "toy task the tiny Transformer is trained on: reverse, copy, sort or first (training page)",
    "vocab": "vocabulary size: the digits 0 .. vocab-1 (training page)",
    "pos": "positional encoding of the trained model: sinusoidal, learned or none (training page)",
    "layers": "number of Transformer layers: of the trained model (training page), of the deep stack (whole-block "
              "page)",
    "steps": "number of training steps (training page)",
    "lr": "Adam learning rate (training page)",
    "ckpt": "training step of the checkpoint whose attention is shown (training page)",
    "digits": "the user's own input sequence of digits (training page)",
    "layer": "layer of the pretrained model whose head is shown up close (1-based)",
    "head": "head of that layer shown up close (1-based)",
    "max_len": "longest sequence length measured on the cost page",
    "arch": "model whose depth and width size the attention-memory table (cost page)",
    "prompt": "the words the decoder writes after (decoder page)",
    "top_k": "top-k: how many of the likeliest words the decoder may draw from, 0 for all (decoder page)",
    "top_p": "top-p: the probability mass of the likeliest words kept, the nucleus (decoder page)",
    "draw": "seed of the decoder's random draws (decoder page)",
    "d_ff": "width of the feed-forward network's hidden layer (whole-block page)",
    "act": "the feed-forward network's activation: ReLU or GELU (whole-block page)",
    "ln": "where the layer norms go: post-LN (the paper) or pre-LN (GPT-2) (whole-block page)",
    "residual": "the deep stack's residual connections (on/off, whole-block page)",
    "norm": "the deep stack's layer norms (on/off, whole-block page)",
    "words": "how many words the decoder has written after the prompt (decoder page)",
}


def _register(key: str) -> None:
    if key not in QUERY_KEYS:
        raise KeyError(f"query key {key!r} is not documented in ui.url_state.QUERY_KEYS")


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
    """A slider whose value lives in the URL under `key`. Its range may depend on other controls."""
    _register(key)
    _forget_value_of_another_range(key, (min_value, max_value, step))
    return container.slider(
        label, min_value=min_value, max_value=max_value, value=default, step=step,
        key=key, help=help, bind="query-params",
    )


#: Session-state key of the range each bound slider of the session was last drawn with.
_SLIDER_RANGES = "_bound_slider_ranges"


def _forget_value_of_another_range(key: str, value_range: tuple[Any, ...]) -> None:
    """Before a slider is drawn with a new range, drop the values Streamlit kept for it under `key`.

    Streamlit identifies a keyed slider by its key and its range, so a new range (a "Generation step" whose
    maximum follows "Tokens T") makes a new widget. The new widget takes its value from the URL, as on a first
    visit; failing that, from a value Streamlit kept under the key when an earlier widget of that key went away.
    That kept value can be stale, and outside the new range: Streamlit then raises instead of drawing the slider.
    Forgetting it leaves the URL (the value the student sees) or else the default, as on a fresh visit.
    """
    ranges = st.session_state.setdefault(_SLIDER_RANGES, {})
    if ranges.get(key, value_range) != value_range and key in st.session_state:
        del st.session_state[key]
    ranges[key] = value_range


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
    (``?temp=1.0``, ``?lr=1e-2``) is accepted too, and the address then holds the option's own form, so the
    link copied next keeps it.
    """
    _register(key)
    options = list(options)
    value = default
    if key not in st.session_state and (option := _numeric_option(st.query_params.get(key), options, format_func)):
        _canonical_link_value(key, format_func(option[0]))
        st.session_state[key] = option[0]  # reached only where the address could not be rewritten
        value = None  # the widget takes its value from the session state set just above
    return container.select_slider(
        label, options=options, value=value, key=key, help=help, format_func=format_func, bind="query-params",
    )


def _canonical_link_value(key: str, label: str) -> None:
    """Put `label` in the address under `key` in place of the hand-written form, and run the app again from it.

    A bound widget takes its first value from the address the run started with, and drops from the address a
    value that is not one of its options' labels (``1.50``); the next run starts from the address as rewritten
    here, so the widget reads the label and keeps it there. The rewrite is possible while no widget of this run
    is bound to `key` yet; otherwise (the key was bound earlier in the session) the caller's fallback reads the
    value without keeping it in the address.
    """
    held = st.session_state.get(_OPENED, query_snapshot())
    try:
        st.query_params[key] = label
    except StreamlitAPIException:
        return
    st.session_state[_HELD] = held
    st.rerun()


#: Session-state keys: the link the last full run opened with, and that link held over a rerun that rewrote it.
_OPENED, _HELD = "_link_opened", "_link_held_over_rerun"


def opened_link() -> dict[str, str | list[str]]:
    """The link a full run of the app opened with, asked by the router before any widget runs.

    The address now; or, on the run `_canonical_link_value` started, the address as the link gave it: the run
    before may have dropped values from the address that it could not use, and `ignored_query_params` must
    still name them.
    """
    link = st.session_state.pop(_HELD, None) or query_snapshot()
    st.session_state[_OPENED] = link
    return link


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
    validate: Callable[[list[str]], object] | None = None,
) -> list[str]:
    """A text box for a whitespace-separated sentence, bound to the URL under `key`.

    Empty input, more than `max_tokens` tokens or a word longer than `max_chars` characters (it would
    not fit on an axis) shows an error and keeps the last valid sentence, so a bad edit never loses the
    view or raises. A page with rules of its own passes `validate`, which raises `ValueError` with its
    message: the last valid sentence is then the last one every rule accepted, kept here in one place, and
    every message names the sentence the page shows.
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
    if validate is not None:
        try:
            validate(tokens)
        except ValueError as err:
            container.error(f"{label}: {err} Showing the last valid sentence: “{' '.join(fallback)}”.")
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


def presenter_mode() -> bool:
    """True when the app-wide presenter mode (``?present=true``) is on."""
    return bool(st.session_state.get("present", False))


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
