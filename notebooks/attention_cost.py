"""The cost page's notebook: the T × T matrix's memory, three implementations timed on the student's machine,
and the weights' size at real context lengths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import Notebook

TITLE = "What attention costs"
#: Real models' depth and width (layers, heads), as on the page.
MODELS = {"all-MiniLM-L6-v2 (6 layers × 12 heads)": [6, 12], "BERT-base (12 layers × 12 heads)": [12, 12],
          "Llama-2-7B (32 layers × 32 heads)": [32, 32], "Llama-3-70B (80 layers × 64 heads)": [80, 64]}


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The longest sequence T to measure, d_k, and the model whose context table is sized."""
    model = str(state["arch"])
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}.")
    return {"max_len": int(state["max_len"]), "d_k": int(state["d_k"]), "model": model}


def cells(nb: Notebook) -> None:
    nb.md(r"""
Every query is compared with every key, so one head of one layer builds a T × T table of scores. Double the text
and that table has four times as many entries: four times the work and, if it is stored, four times the memory.

$$S = \frac{Q K^\top}{\sqrt{d_k}} \in \mathbb{R}^{T \times T}:\quad T^2 d_k \text{ multiply-adds},\quad
T^2 \text{ numbers per head and layer}$$

## 1 · Measure it

Before measuring: one T × T float32 matrix takes T² × 4 bytes; the naive PyTorch version keeps three of them
(scores, scaled scores, weights) plus Q, K, V and the output.
""")
    nb.code(f"""
models = {MODELS!r}  # (layers, heads)
one_matrix_mib = max_len ** 2 * 4 / 2 ** 20
naive_mib = (3 * max_len ** 2 + 4 * max_len * d_k) * 4 / 2 ** 20
print(f"one T x T float32 matrix at T = {{max_len:,}}: {{one_matrix_mib:.1f}} MiB")
print(f"naive PyTorch at T = {{max_len:,}}, predicted: {{naive_mib:.1f}} MiB")
""")
    nb.md("""
Three implementations of the same formula, timed on *your* machine on one CPU thread: **core**, the lesson's NumPy
in float64; **naive PyTorch**, the same three lines in float32, which store the whole T × T matrix; **fused SDPA**,
`torch.nn.functional.scaled_dot_product_attention`, which on CPU walks over blocks of keys and never builds the
T × T matrix. Each call is repeated (the best time kept); a method stops once one call takes more than a second,
and the whole run after 12 seconds.
""")
    nb.code('''
import time

def core(q, k, v):
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])  # (1, 1, T, T)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v  # (1, 1, T, d_k)

def naive(q, k, v):
    weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)  # (1, 1, T, T), stored
    return weights @ v

def fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)  # (1, 1, T, d_k), blocks of keys only

def best_time(f, args, min_total=0.2, max_repeats=7):
    times = []
    while len(times) < 3 or (sum(times) < min_total and len(times) < max_repeats):
        start = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - start)
    return min(times)

torch.set_num_threads(1)
sizes = [n for n in (64, 128, 256, 512, 1024, 2048, 4096) if n <= max_len]
rng = np.random.default_rng(0)
measured, stopped, started = [], set(), time.perf_counter()
for T in sizes:
    q, k, v = (rng.standard_normal((1, 1, T, d_k)) for _ in range(3))  # (batch, heads, T, d_k)
    for name, f, args in [("core", core, (q, k, v)),
                          ("naive", naive, [torch.from_numpy(a).float() for a in (q, k, v)]),
                          ("fused", fused, [torch.from_numpy(a).float() for a in (q, k, v)])]:
        if name in stopped or time.perf_counter() - started > 12:
            continue
        seconds = best_time(f, args)
        measured.append({"method": name, "T": T, "time (ms)": seconds * 1e3})
        if seconds > 1.0:
            stopped.add(name)
measured = pd.DataFrame(measured)
print(measured.pivot(index="T", columns="method", values="time (ms)").round(3))
''')
    nb.md(r"""
On log–log axes, time ≈ c·T^p is a straight line of slope p: about 2 for anything that touches every (query, key)
pair, once T is large enough (from 256 here) for the arithmetic to dominate the fixed cost of a call.
""")
    nb.code("""
slopes = {}
for name, rows in measured.groupby("method"):
    big = rows[rows["T"] >= 256] if (rows["T"] >= 256).sum() >= 2 else rows
    if len(big) >= 2:
        slopes[name] = np.polyfit(np.log(big["T"]), np.log(big["time (ms)"]), 1)[0]  # the exponent p
        print(f"{name}: time grows about as T to the power {slopes[name]:.2f}")
alt.Chart(measured, title="time of one call against T").mark_line(point=True).encode(
    x=alt.X("T:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("time (ms):Q", scale=alt.Scale(type="log")),
    color="method:N")
""")
    nb.md("""
## 2 · At real context lengths

No measuring needed: a T × T matrix of weights has T² entries of 2 bytes (float16) or 4 bytes (float32), for every
head of every layer.
""")
    nb.code("""
n_layers, n_heads = models[model]
contexts = [512, 2048, 8192, 32_768, 131_072]
context_table = pd.DataFrame([
    {"context": T, "dtype": dtype, "entries per head": T ** 2, "per head": T ** 2 * size,
     "per layer": T ** 2 * size * n_heads, "all layers": T ** 2 * size * n_heads * n_layers}
    for T in contexts for dtype, size in (("float16", 2), ("float32", 4))])
print(model)
print(context_table.assign(**{c: context_table[c] / 2 ** 30 for c in ("per head", "per layer", "all layers")})
      .rename(columns={"per head": "per head (GiB)", "per layer": "per layer (GiB)", "all layers": "all layers (GiB)"}))
alt.Chart(context_table, title=f"the attention weights of {model}").mark_line(point=True).encode(
    x=alt.X("context:Q", scale=alt.Scale(type="log", base=2)), y=alt.Y("all layers:Q", scale=alt.Scale(type="log")),
    color="dtype:N")
""")
