r"""What attention costs: time and memory of the ``T x T`` score matrix, measured (its sizes at real context
lengths, computed: `cost.sizes`).

Self-attention compares every query with every key, so one head forms

.. math:: S = \frac{Q K^\top}{\sqrt{d_k}} \in \mathbb{R}^{T \times T}

which is :math:`T^2 d_k` multiply-adds and :math:`T^2` numbers to store: doubling the
sequence length quadruples both. On a log–log plot a cost :math:`c\,T^p` is a straight
line of slope :math:`p`, so `loglog_slope` reads the exponent off the measurements.

Three implementations of the same formula are timed:

* ``core`` — `core.scaled_dot_product_attention`, NumPy float64, the whole ``T x T`` matrix;
* ``naive`` — the same three lines in PyTorch float32 (``softmax(Q Kᵀ/√d_k) V``);
* ``fused`` — ``torch.nn.functional.scaled_dot_product_attention``, which on CPU runs a
  flash-attention kernel: it walks over blocks of keys and never stores the ``T x T``
  matrix, so its memory grows like ``T`` — but it still does the ``T²`` work.

Every measurement is bounded: sizes are capped (`MAX_SEQ_LEN`, `MAX_BYTES`), a method
stops as soon as one call took longer than the per-call budget or the next one is
predicted to (from the quadratic growth), and the whole run stops at a total budget.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits

from core._checks import positive_int
from core.attention import scaled_dot_product_attention
from cost.sizes import weight_matrix_bytes

#: Implementations that can be measured, in display order, with their labels.
METHODS: dict[str, str] = {
    "core": "core (NumPy float64)",
    "naive": "naive PyTorch (float32)",
    "fused": "fused SDPA (PyTorch float32)",
}
#: Bytes per value of each implementation's arrays.
BYTES_PER_VALUE: dict[str, int] = {"core": 8, "naive": 4, "fused": 4}
#: How each implementation's memory is measured.
MEMORY_SOURCE: dict[str, str] = {
    "core": "tracemalloc peak (NumPy reports its allocations to it)",
    "naive": "torch.profiler: bytes allocated during the call",
    "fused": "torch.profiler: bytes allocated during the call",
}
#: No sequence length above this is ever measured.
MAX_SEQ_LEN = 8192
#: No measurement whose predicted memory exceeds this (bytes) is run.
MAX_BYTES = 1 << 30
#: Full ``T x T`` arrays each implementation keeps alive at its peak (scores, weights, ...).
_NXN_ARRAYS: dict[str, int] = {"core": 3, "naive": 3, "fused": 0}


@dataclass(frozen=True)
class Measurement:
    """One timed call: `method` at sequence length `n`."""

    method: str
    n: int
    seconds: float  # best of the repeats
    repeats: int
    memory_bytes: float  # measured (see MEMORY_SOURCE); NaN when not measured
    nxn_bytes: int  # computed: one T x T matrix per head, in the method's float width


@dataclass(frozen=True)
class CostRun:
    """All measurements of one run, and why it stopped where it did."""

    measurements: tuple[Measurement, ...]
    notes: tuple[str, ...]  # one line per method that stopped early, or a total-budget stop
    elapsed: float
    d_k: int
    n_heads: int


def naive_torch_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""The formula as written, in PyTorch: :math:`\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V`, ``T x T`` stored."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, T, d_k) @ (B, H, d_k, T) -> (B, H, T, T)
    weights = torch.softmax(scores, dim=-1)  # (B, H, T, T)
    return weights @ v  # (B, H, T, T) @ (B, H, T, d_k) -> (B, H, T, d_k)


def fused_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """PyTorch's fused kernel: the same output, computed block by block without the ``T x T`` matrix.

    The CPU flash kernel needs 4-D ``(B, H, T, d_k)`` inputs; with 3-D ones PyTorch falls back
    to the plain math path, which does store the ``T x T`` matrix.
    """
    return F.scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)


def core_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """`core.scaled_dot_product_attention`'s output (float64 NumPy)."""
    return scaled_dot_product_attention(q, k, v)[0]  # (B, H, T, d_k)


_FUNCTIONS: dict[str, Callable] = {"core": core_attention, "naive": naive_torch_attention, "fused": fused_attention}


def predicted_bytes(method: str, n: int, d_k: int, n_heads: int = 1) -> int:
    """Rough peak memory of one call: the ``T x T`` arrays it keeps plus Q, K, V and the output."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {list(METHODS)}.")
    b = BYTES_PER_VALUE[method]
    return n_heads * (_NXN_ARRAYS[method] * n * n + 4 * n * d_k) * b


def loglog_slope(n: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    r"""Least-squares fit of :math:`\log y = p \log n + c`; returns ``(p, c)`` (natural logs).

    ``p`` is the growth exponent: about 2 for anything that touches every (query, key) pair.
    Needs at least two distinct positive ``n`` and positive ``y``.
    """
    n = np.asarray(n, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if n.shape != y.shape or n.ndim != 1:
        raise ValueError(f"n and y must be 1-D of the same length, got shapes {n.shape} and {y.shape}.")
    keep = np.isfinite(y) & (y > 0) & (n > 0)
    if len(np.unique(n[keep])) < 2:
        raise ValueError(f"a slope needs at least two sizes with positive values, got {int(keep.sum())}.")
    p, c = np.polyfit(np.log(n[keep]), np.log(y[keep]), 1)
    return float(p), float(c)


@dataclass(frozen=True)
class SlopeFit:
    r"""Straight lines through one method's measurements on log–log axes: :math:`y \approx e^{c}\,T^{p}`."""

    method: str
    time_slope: float  # p for seconds per call
    time_log_coef: float  # c for seconds per call
    memory_slope: float  # p for bytes (NaN when memory was not measured)
    memory_log_coef: float
    n_min: int  # the fitted range of sequence lengths
    n_max: int

    def seconds(self, n: np.ndarray | float) -> np.ndarray:
        """Fitted time per call at sequence length(s) `n`."""
        return np.exp(self.time_log_coef) * np.asarray(n, dtype=np.float64) ** self.time_slope

    def memory(self, n: np.ndarray | float) -> np.ndarray:
        """Fitted memory (bytes) at sequence length(s) `n`."""
        return np.exp(self.memory_log_coef) * np.asarray(n, dtype=np.float64) ** self.memory_slope


def fit_slopes(run: CostRun, fit_from: int = 256) -> dict[str, SlopeFit]:
    """`loglog_slope` of time and memory for each method of `run`, from ``T >= fit_from``.

    Small sizes are dominated by fixed per-call costs (Python, dispatch), which flatten
    the line; when fewer than two sizes reach `fit_from`, every size is used. Methods
    with fewer than two sizes measured get no fit.
    """
    fits: dict[str, SlopeFit] = {}
    for method in METHODS:
        ms = [m for m in run.measurements if m.method == method]
        big = [m for m in ms if m.n >= fit_from]
        use = big if len({m.n for m in big}) >= 2 else ms
        if len({m.n for m in use}) < 2:
            continue
        n = [m.n for m in use]
        p_t, c_t = loglog_slope(n, [m.seconds for m in use])
        memory = [m.memory_bytes for m in use]
        p_m, c_m = loglog_slope(n, memory) if np.all(np.isfinite(memory)) else (math.nan, math.nan)
        fits[method] = SlopeFit(method=method, time_slope=p_t, time_log_coef=c_t, memory_slope=p_m,
                                memory_log_coef=c_m, n_min=min(n), n_max=max(n))
    return fits


def _inputs(method: str, n: int, d_k: int, n_heads: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    qkv = rng.standard_normal((3, 1, n_heads, n, d_k))  # Q, K, V: each (B=1, H, T, d_k)
    if method == "core":
        return tuple(qkv)
    return tuple(torch.from_numpy(x.astype(np.float32)) for x in qkv)


def _time_call(fn: Callable, args: tuple, budget: float, min_total: float, max_repeats: int) -> tuple[float, int]:
    """Best (minimum) time of 3 to `max_repeats` calls: repeat until `min_total` seconds are spent.

    The minimum is the least disturbed run (other processes only ever add time).
    Stops early once the calls together took longer than `budget`.
    """
    times: list[float] = []
    while len(times) < max_repeats and (len(times) < 3 or sum(times) < min_total):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
        if sum(times) > budget:
            break
    return min(times), len(times)


def _measure_memory(method: str, fn: Callable, args: tuple) -> float:
    if method == "core":
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn(*args)
        peak = tracemalloc.get_traced_memory()[1] - base
        if not was_tracing:
            tracemalloc.stop()
        return float(peak)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(*args)
    # Allocations are attributed to the op that made them (its "self" memory; frees count negative).
    return float(sum(max(e.self_cpu_memory_usage, 0) for e in prof.events() if e.name != "[memory]"))


def measure_attention_cost(
    seq_lens: Sequence[int],
    *,
    d_k: int = 64,
    n_heads: int = 1,
    methods: Sequence[str] = tuple(METHODS),
    time_budget: float = 1.0,
    total_budget: float = 15.0,
    max_bytes: int = MAX_BYTES,
    min_repeat_time: float = 0.05,
    max_repeats: int = 7,
    measure_memory: bool = True,
    seed: int = 0,
    threads: int | None = 1,
    progress: Callable[[float, str], None] | None = None,
) -> CostRun:
    """Time (and measure the memory of) each method at each sequence length, within budgets.

    Args:
        seq_lens: sequence lengths ``T``, measured in increasing order (each at most `MAX_SEQ_LEN`).
        d_k: width of queries/keys/values; n_heads: heads computed in one call.
        time_budget: a method stops once one call took longer, or the next is predicted to
            (time grows like ``T²``: ``t(T') ≈ t(T)·(T'/T)²``).
        total_budget: the whole run stops before a measurement predicted to end past it.
        max_bytes: skip measurements whose predicted memory (`predicted_bytes`) exceeds this.
        min_repeat_time, max_repeats: repeat a call (at least 3 times) until this much time is spent;
            the best of the repeats is kept.
        measure_memory: also measure memory, in one extra untimed call (see `MEMORY_SOURCE`).
        seed: seeds the random Q, K, V.
        threads: PyTorch and BLAS threads during the run (restored after); one thread is much
            steadier on a busy shared machine, where a thread pool waits for descheduled workers.
            None: unchanged.
        progress: called as ``progress(fraction_done, message)`` after every measurement.
    """
    d_k, n_heads = positive_int(d_k, "d_k"), positive_int(n_heads, "n_heads")
    sizes = _checked_sizes(seq_lens)
    _check_methods_and_budgets(methods, time_budget, total_budget)
    if measure_memory and any(m != "core" for m in methods):
        if progress is not None:
            progress(0.0, "Starting the PyTorch profiler (slow only on the first run of the server)…")
        _measure_memory("naive", naive_torch_attention, _inputs("naive", 8, 4, 1, seed))  # not counted in budgets
    start = time.perf_counter()
    saved_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(positive_int(threads, "threads"))
    try:
        with threadpool_limits(limits=threads):  # NumPy's BLAS threads too (None: unchanged)
            rows, notes = _run(sizes, methods, d_k, n_heads, time_budget, total_budget, max_bytes, min_repeat_time,
                               max_repeats, measure_memory, seed, progress, start)
    finally:
        torch.set_num_threads(saved_threads)
    return CostRun(measurements=tuple(rows), notes=tuple(notes), elapsed=time.perf_counter() - start,
                   d_k=d_k, n_heads=n_heads)


def _checked_sizes(seq_lens: Sequence[int]) -> list[int]:
    """The distinct sequence lengths in increasing order: at least one, each positive and at most `MAX_SEQ_LEN`."""
    sizes = sorted({positive_int(int(n), "sequence length") for n in seq_lens})
    if not sizes:
        raise ValueError("seq_lens is empty: give at least one sequence length.")
    if sizes[-1] > MAX_SEQ_LEN:
        raise ValueError(f"sequence length {sizes[-1]} is above the cap MAX_SEQ_LEN={MAX_SEQ_LEN}.")
    return sizes


def _check_methods_and_budgets(methods: Sequence[str], time_budget: float, total_budget: float) -> None:
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {list(METHODS)}, got {list(methods)}.")
    if time_budget <= 0 or total_budget <= 0:
        raise ValueError(f"the budgets must be positive, got time_budget={time_budget}, total_budget={total_budget}.")


def _run(sizes: list[int], methods: Sequence[str], d_k: int, n_heads: int, time_budget: float, total_budget: float,
         max_bytes: int, min_repeat_time: float, max_repeats: int, measure_memory: bool, seed: int,
         progress: Callable[[float, str], None] | None, start: float) -> tuple[list[Measurement], list[str]]:
    """The measuring loop of `measure_attention_cost` (sizes outer, methods inner)."""
    rows: list[Measurement] = []
    notes: list[str] = []
    last: dict[str, tuple[int, float]] = {}
    active = list(methods)
    total_steps = len(sizes) * len(methods)
    done = 0
    with torch.inference_mode():
        for n in sizes:
            for method in list(active):
                label = METHODS[method]
                need = predicted_bytes(method, n, d_k, n_heads)
                predicted = last[method][1] * (n / last[method][0]) ** 2 if method in last else 0.0
                elapsed = time.perf_counter() - start
                if need > max_bytes:
                    notes.append(f"{label}: stopped before T={n}, which would need about {need / 2**20:.0f} MiB "
                                 f"(limit {max_bytes / 2**20:.0f} MiB).")
                elif predicted > time_budget:
                    notes.append(f"{label}: stopped before T={n}, predicted {predicted:.2f} s per call "
                                 f"(budget {time_budget:g} s).")
                elif elapsed + 3 * predicted > total_budget:
                    notes.append(f"{label}: stopped before T={n}: the whole run's {total_budget:g} s budget is used.")
                else:
                    fn = _FUNCTIONS[method]
                    args = _inputs(method, n, d_k, n_heads, seed)
                    fn(*args)  # warm-up (allocator, threads, kernel selection)
                    seconds, reps = _time_call(fn, args, time_budget, min_repeat_time, max_repeats)
                    memory = _measure_memory(method, fn, args) if measure_memory else math.nan
                    rows.append(Measurement(method=method, n=n, seconds=seconds, repeats=reps, memory_bytes=memory,
                                            nxn_bytes=n_heads * weight_matrix_bytes(n, BYTES_PER_VALUE[method])))
                    last[method] = (n, seconds)
                    if seconds > time_budget:
                        notes.append(f"{label}: stopped after T={n}: one call took {seconds:.2f} s "
                                     f"(budget {time_budget:g} s).")
                    else:
                        done += 1
                        if progress is not None:
                            progress(min(done / total_steps, 1.0), f"{label}, T = {n}: {seconds * 1e3:.2f} ms")
                        continue
                active.remove(method)
                done += sum(1 for m in sizes if m >= n)
                if progress is not None:
                    progress(min(done / total_steps, 1.0), notes[-1])
            if not active:
                break
    return rows, notes
