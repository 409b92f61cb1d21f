"""What attention costs: time and memory of the T x T score matrix, measured live on this server."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import streamlit as st

from cost.measure import (
    MEMORY_SOURCE,
    METHODS,
    CostRun,
    fit_slopes,
    fused_attention,
    loglog_slope,
    measure_attention_cost,
    naive_torch_attention,
    predicted_bytes,
)
from cost.sizes import CONTEXT_LIMITS, MODEL_SHAPES, SOURCES, context_table, format_bytes, weight_matrix_bytes
from ui.chart_names import ChartName
from ui.charts import attention_cost as charts
from ui.display import show_chart
from ui.layout import controls_row, explain, introduction, page_fragment, show_source, static_table
from ui.take_home import offer_notebook
from ui.url_state import bound_choice, bound_select_slider
from ui.wording.attention_cost import context_limit, measured_slopes

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {}

#: Longest sequence lengths offered; the measurement starts at 64 and doubles.
MAX_LEN_OPTIONS = [256, 512, 1024, 2048, 4096]
D_K_OPTIONS = [16, 32, 64, 128]
#: One call slower than this stops that method; the whole run stops at TOTAL_BUDGET_S.
CALL_BUDGET_S = 1.0
TOTAL_BUDGET_S = 12.0
#: Sizes below this are dominated by fixed per-call overheads and left out of the slope fit.
FIT_FROM = 256
CONTEXTS = [512, 2048, 8192, 32_768, 131_072]


@st.cache_resource
def measurement_lock() -> threading.Lock:
    """One measurement at a time per server process, whoever asks."""
    return threading.Lock()


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def measure(max_len: int, d_k: int) -> CostRun:
    """The bounded measurement for these settings, with a progress bar (cached: measured once an hour).

    The bar is created and removed in here, so a cache hit replays nothing visible.
    """
    sizes = [int(n) for n in 2 ** np.arange(6, 14) if n <= max_len]  # 64, 128, ... max_len
    bar = st.progress(0.0, text="Measuring…")
    run = measure_attention_cost(sizes, d_k=d_k, time_budget=CALL_BUDGET_S, total_budget=TOTAL_BUDGET_S,
                                 progress=lambda fraction, message: bar.progress(fraction, text=message))
    bar.empty()
    return run


introduction(
    "What attention costs",
    "Every query is compared with every key, so one head of one layer builds a T × T table of scores. "
    "Double the text and that table has four times as many entries: four times the work and, if it is "
    "stored, four times the memory. This page measures it live on this server, for three implementations "
    "of the same formula, and computes what it means at the context lengths real models use.",
    r"S = \frac{Q K^\top}{\sqrt{d_k}} \in \mathbb{R}^{T \times T}:\quad "
    r"T^2 d_k \text{ multiply-adds},\quad T^2 \text{ numbers per head and layer};\qquad "
    r"A V:\quad T^2 d_v \text{ multiply-adds more}",
)


@page_fragment
def measure_section() -> None:
    """Section 1, the measurement: a fragment nested in the page's (its sliders and button change nothing below)."""
    st.header("1 · Measure it")
    explain(
        "**core** is the NumPy function from the lesson (float64); **naive PyTorch** is the same three lines "
        "in float32, which store the whole T × T matrix; **fused SDPA** is "
        "`torch.nn.functional.scaled_dot_product_attention`, which on CPU walks over blocks of keys and keeps "
        "only a running softmax, so the T × T matrix never exists. One head, one sentence, one CPU thread."
    )
    max_len, d_k, pressed = measure_controls()
    predicted_memory(max_len, d_k)
    result = measured_run(max_len, d_k, pressed)
    if result is None:
        st.info("Press **Measure** to time the three implementations on this server "
                f"(T = 64 … {max_len}, about {TOTAL_BUDGET_S:g} s at most).", icon=":material/timer:")
    else:
        show_measurements(result)


def measure_controls() -> tuple[int, int, bool]:
    """The longest T and d_k to measure, and whether Measure was pressed."""
    with controls_row():
        max_len = int(bound_select_slider(
            "Longest sequence T", "max_len", MAX_LEN_OPTIONS, 2048,
            help="Measures T = 64, 128, … up to this. Each method stops early once one call takes more than "
                 f"{CALL_BUDGET_S:g} s (or is predicted to); the whole run stops after {TOTAL_BUDGET_S:g} s."))
        d_k = int(bound_select_slider("d_k", "d_k", D_K_OPTIONS, 64,
                                      help="Width of each query, key and value vector."))
        pressed = st.button("Measure", type="primary", icon=":material/timer:",
                            help="Runs the measurement on this server (a few seconds). Results are cached per setting.")
    return max_len, d_k, pressed


def predicted_memory(max_len: int, d_k: int) -> None:
    """What one T × T matrix and the naive version should take, before anything is measured."""
    c1, c2 = st.columns(2)
    c1.metric(f"one T × T float32 matrix at T = {max_len:,}", f"{weight_matrix_bytes(max_len, 4) / 2**20:.1f} MiB",
              help="Computed before measuring: T² entries × 4 bytes, for one head.")
    c2.metric(f"naive PyTorch at T = {max_len:,}, predicted",
              f"{predicted_bytes('naive', max_len, d_k) / 2**20:.1f} MiB",
              help="Three T × T float32 tensors (scores, scaled scores, weights) plus Q, K, V and the output. "
                   "Compare with what the measurement finds.")


def measured_run(max_len: int, d_k: int, pressed: bool) -> CostRun | None:
    """The measurement at these settings: run when Measure is pressed (one at a time per server), or from the cache
    when this session measured them before; None when there is nothing to show yet."""
    measured_key = "_cost_measured"
    settings = (max_len, d_k)
    result: CostRun | None = None
    if pressed:
        lock = measurement_lock()
        if not lock.acquire(blocking=False):
            st.warning("Another measurement is running on this server right now; press Measure again in a few seconds.")
        else:
            try:
                result = measure(max_len, d_k)
            finally:
                lock.release()
            st.session_state.setdefault(measured_key, set()).add(settings)
    elif settings in st.session_state.get(measured_key, set()):
        result = measure(max_len, d_k)  # measured before with these settings: from the cache
    return result


def show_measurements(result: CostRun) -> None:
    """The measured time and memory against T, their fitted slopes, and every measurement as a table."""
    fits = fit_slopes(result, fit_from=FIT_FROM)
    longest = max((m.n for m in result.measurements), default=0)
    slopes = "; ".join(f"{METHODS.get(f.method, f.method)}: time grows about as T to the power {f.time_slope:.1f}"
                       for f in fits.values() if np.isfinite(f.time_slope))
    show_chart(charts.measured_chart(result, fits),
               alt=ChartName("Time and memory of attention against sequence length, on log-log axes",
                             f"Measured up to T = {longest:,}; {slopes}."))
    st.caption("Solid: measured. Dashed: the straight-line fit on the log–log axes, from T = "
               f"{FIT_FROM} up (smaller sizes are dominated by fixed overheads). Memory: "
               + "; ".join(f"{METHODS[m]}: {src}" for m, src in MEMORY_SOURCE.items()) + ".")
    for col, fit in zip(st.columns(max(1, len(fits))), fits.values(), strict=False):
        col.metric(f"{METHODS[fit.method]}: slope of time", f"{fit.time_slope:.2f}",
                   help="Exponent p in time ≈ c·T^p, fitted on the log–log plot. 2 = quadratic.")
        col.metric("slope of memory", f"{fit.memory_slope:.2f}",
                   help="Exponent p in memory ≈ c·T^p. 2 = quadratic, 1 = linear.")
    explain(measured_slopes(fits))
    for note in result.notes:
        st.caption(f"Stopped early — {note}")
    rows = pd.DataFrame([vars(m) for m in result.measurements])
    table = pd.DataFrame({"method": rows["method"].map(METHODS), "T": rows["n"], "time (ms)": rows["seconds"] * 1e3,
                          "calls timed": rows["repeats"], "memory (MiB)": rows["memory_bytes"] / 2**20})
    with st.expander(f"All {len(rows)} measurements ({result.elapsed:.1f} s on this server, d_k = {result.d_k})"):
        st.dataframe(table, hide_index=True, column_config={
            "time (ms)": st.column_config.NumberColumn(format="%.3f"),
            "memory (MiB)": st.column_config.NumberColumn(format="%.3f")})


@page_fragment
def context_section() -> None:
    """Section 2, real context lengths: a fragment nested in the page's (picking a model reruns only this section)."""
    st.header("2 · At real context lengths")
    explain(
        "No measuring needed for this part: a T × T matrix of weights has T² entries of 2 bytes (float16) or "
        "4 bytes (float32), for every head of every layer. The last column holds every layer's maps at once, as "
        "training does (it keeps them for the backward pass); inference can free a layer's maps before the next "
        "layer's. Pick a model to size the table."
    )
    arch = bound_choice("Model", "arch", list(MODEL_SHAPES), default=next(iter(MODEL_SHAPES)),
                        help="Depth (layers) and width (heads per layer) of a real model.")
    n_layers, n_heads = MODEL_SHAPES[arch]
    rows_ctx = context_table(CONTEXTS, n_layers, n_heads)
    show_chart(charts.context_chart(rows_ctx, arch.split(" (")[0]),
               alt=ChartName(f"Memory of the attention weights against context length for {arch}",
                             f"Up to {format_bytes(rows_ctx[-1]['all layers'])} for every layer's maps at once at "
                             f"{rows_ctx[-1]['context']:,} tokens in {rows_ctx[-1]['dtype']}."))
    ctx = pd.DataFrame(rows_ctx)
    for col in ("per head", "per layer", "all layers"):
        ctx[col] = ctx[col].map(format_bytes)
    ctx["context"] = ctx["context"].map(lambda n: f"{n:,}")
    ctx["entries per head"] = ctx["entries per head"].map(lambda n: f"{n:,}")
    titles = {"context": "context length T", "per layer": f"per layer (× {n_heads} heads)",
              "all layers": f"all {n_layers} layers"}
    limit = CONTEXT_LIMITS[arch]
    ctx["the model reads it"] = ["yes" if n <= limit else "no" for n in (r["context"] for r in rows_ctx)]
    static_table({titles.get(c, c): ctx[c].tolist() for c in ctx.columns})  # text, not a grid to Tab through
    st.caption(context_limit(arch, limit, CONTEXTS))
    st.caption(f"Layers, heads and context limit from {SOURCES[arch]}.")
    longest = CONTEXTS[-1]
    st.caption(
        f"At T = {longest:,} the weights of one float16 head take {format_bytes(weight_matrix_bytes(longest, 2))}, "
        f"and one layer of this model {format_bytes(weight_matrix_bytes(longest, 2) * n_heads)}. That is why "
        "long-context models use fused (flash) attention, which never stores the matrix; the T² work remains."
    )


@page_fragment
def page_body() -> None:
    measure_section()
    context_section()
    offer_notebook("attention_cost", max_len=st.session_state.get("max_len", 2048), d_k=st.session_state.get("d_k", 64),
                   arch=st.session_state.get("arch", next(iter(MODEL_SHAPES))))
    show_source(naive_torch_attention, fused_attention, measure_attention_cost, loglog_slope, context_table)


page_body()
