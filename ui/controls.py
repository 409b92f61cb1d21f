"""Shared Streamlit helpers: URL-bound controls, show-the-code, chart display.

Every control in the app is created here, bound to a URL query parameter
(``bind="query-params"``), so any view can be shared as a link. Streamlit drops
a malformed or out-of-range URL value and falls back to the widget's default.

The query-parameter keys are part of the app's public API (links in slides
depend on them): keep them short and stable, and document new ones in
`QUERY_KEYS`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import altair as alt
import streamlit as st

from core.embeddings import tokenize

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
    "tgt": "target (decoder) sentence",
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
    """A slider over a fixed list of options (e.g. powers of two, divisors) bound to the URL under `key`."""
    _register(key)
    return container.select_slider(
        label, options=list(options), value=default, key=key, help=help, format_func=format_func,
        bind="query-params",
    )


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
    help: str | None = None,
    container: Any = st,
) -> list[str]:
    """A text box for a whitespace-separated sentence, bound to the URL under `key`.

    Empty input or more than `max_tokens` tokens shows an error and keeps the
    last valid sentence, so a bad edit never loses the view or raises.
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
    st.session_state[last_key] = tokens
    return tokens


def seed_slider(*, max_value: int = 99, container: Any = st, lesson_seed: bool = True) -> int:
    """The app-wide seed slider (``?seed=``); seed 0 reproduces the lesson's numbers."""
    help_text = "Seeds the random matrices. " + (
        "0 reproduces the lesson's printed numbers." if lesson_seed else "Same seed, same numbers."
    )
    seed = bound_slider("Seed", "seed", 0, max_value, 0, help=help_text, container=container)
    if lesson_seed and seed == 0:
        container.caption("Seed 0: these are exactly the lesson's numbers.")
    return int(seed)


def show_source(*objects: Callable[..., Any] | type, title: str = "Show the code") -> None:
    """An expander with the real source of the `core` functions being taught (never a copy)."""
    with st.expander(title, icon=":material/code:"):
        for obj in objects:
            st.caption(f"`{obj.__module__}.{obj.__qualname__}`")
            st.code(inspect.getsource(obj), language="python")


def show_chart(chart: alt.TopLevelMixin, **kwargs: Any) -> Any:
    """Draw an Altair chart at its own width (heatmaps must not be stretched)."""
    return st.altair_chart(chart, width="content", **kwargs)
