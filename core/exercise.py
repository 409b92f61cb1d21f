r"""The "Build this" exercise: check a student's own ``scaled_dot_product_attention``.

The lesson ends by asking for attention written from memory in PyTorch,

.. math:: \operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V,

tested on random ``(batch=2, seq_len=5, d_k=16)`` tensors, compared with
``torch.nn.functional.scaled_dot_product_attention`` and, as a stretch, run on the worked
example and with a causal mask. `evaluate` turns what a submission returned (a `RunResult`)
into that checklist and says what is wrong, by recognising the usual mistakes (`Mistake`).

Running the submitted code is not this module's job: it is hostile until proven otherwise, and
`exercise.sandbox.check_submission` runs it in a kernel-filtered child process and hands the
data it sent back (never objects) to `evaluate`. `run_trusted` runs *trusted* functions (the
reference solution, the known mistakes) in this process through the same calling code.

Shapes: ``(B, T, d_k)`` for the random test (batch, sequence length, key width), ``(T, d_model)``
for the worked example. Everything is deterministic: the same source gives the same report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product
from typing import Any

import numpy as np
import torch

from core import exercise_runner
from core.reference import max_abs_diff, torch_scaled_dot_product_attention
from core.worked_example import worked_example

FUNCTION_NAME = exercise_runner.FUNCTION_NAME
#: The lesson's test shape: batch = 2, seq_len = 5, d_k = 16.
BATCH, SEQ_LEN, D_K = 2, 5, 16
#: ``torch.allclose`` tolerances of the main check (the lesson uses ``atol=1e-6``).
ALLCLOSE_RTOL, ALLCLOSE_ATOL = 1e-5, 1e-6
#: Largest difference from the lesson's float64 worked-example output accepted in float32.
WORKED_ATOL = 1e-5
#: How far a row of weights may sum from 1 in float32.
ROW_SUM_ATOL = 1e-5

DEFAULT_TIMEOUT_S = 5.0
#: Address space the student's code may use on top of what Python + PyTorch already mapped.
MEMORY_BUDGET_BYTES = 1 << 30
FILE_SIZE_BYTES = 1 << 20
OPEN_FILES = 64
#: What is kept of the student's stdout and of stderr (the rest is read and thrown away).
OUTPUT_CAP_BYTES = 4096
RESULT_CAP_BYTES = 4 << 20
MAX_SOURCE_CHARS = 50_000

SKELETON = '''\
import torch
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Scaled dot-product attention, written by you: softmax(Q Kᵀ / √d_k) V.

    Args:
        Q: queries, shape (batch, seq_len, d_k), or (seq_len, d_k) with no batch.
        K: keys, shape (batch, seq_len, d_k).
        V: values, shape (batch, seq_len, d_v).
        mask: optional (seq_len, seq_len) tensor, 1 where a query may attend to a
            key and 0 where it may not (the stretch: torch.tril(torch.ones(T, T))).

    Returns:
        (output, weights): output of shape (batch, seq_len, d_v) and the
        attention weights of shape (batch, seq_len, seq_len), rows summing to 1.
    """
    raise NotImplementedError("write your attention here")
'''

CHECK_RUNS = "The function exists and runs"
CHECK_SHAPE = f"Output shape is ({BATCH}, {SEQ_LEN}, {D_K})"
CHECK_ROWS = "Each row of the weights sums to 1"
CHECK_ALLCLOSE = "torch.allclose with F.scaled_dot_product_attention"
CHECK_WORKED = "Stretch: the worked example in float32"
CHECK_CAUSAL = "Stretch: causal mask, exact zeros above the diagonal"
#: The checklist, in the lesson's order.
CHECK_NAMES = (CHECK_RUNS, CHECK_SHAPE, CHECK_ROWS, CHECK_ALLCLOSE, CHECK_WORKED, CHECK_CAUSAL)


# =========================================================================== results


@dataclass(frozen=True)
class Check:
    """One line of the checklist."""

    name: str
    passed: bool
    message: str


@dataclass
class ExerciseReport:
    """What `check_submission` found. ``checks`` follow `CHECK_NAMES`, always all six.

    Besides the checklist: ``diagnoses`` (the recognised mistakes, in words), ``incident``
    (a timeout, a crash, ... or None), the student's printed output (truncated), the worked
    example's output and the causal weights their function produced (for the page's charts),
    and how the code was isolated (``isolation``, ``limits``).
    """

    passed: bool
    checks: list[Check]
    diagnoses: list[str] = field(default_factory=list)
    incident: str | None = None
    stdout: str = ""
    stderr: str = ""
    worked_output: np.ndarray | None = None
    causal_weights: np.ndarray | None = None
    elapsed_s: float = 0.0
    run_s: float | None = None
    isolation: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    sandbox_uid: int | None = None


@dataclass(frozen=True)
class Case:
    """One set of test inputs, float32 (as the student's PyTorch code sees them)."""

    name: str
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    mask: np.ndarray | None = None

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "Q": self.Q.tolist(), "K": self.K.tolist(), "V": self.V.tolist(),
                "mask": None if self.mask is None else self.mask.tolist()}


def exercise_cases(seed: int = 0) -> tuple[Case, ...]:
    """The inputs every submission is called on.

    * ``random``: Q, K, V of shape ``(2, 5, 16)``, standard normal, as the lesson asks;
    * ``probe``: ``(4, 4, 4)``: batch = T = d_k, so that even a mistaken transpose runs and
      can be recognised;
    * ``worked``: the lesson's worked example, ``Q = X W_q`` etc. in float32, ``(3, 4)``;
    * ``worked_causal``: the same with the causal mask ``tril(ones(3, 3))``.
    """
    rng = np.random.default_rng(seed)
    f32 = np.float32
    rand = [rng.standard_normal((BATCH, SEQ_LEN, D_K)).astype(f32) for _ in range(3)]
    probe = [rng.standard_normal((4, 4, 4)).astype(f32) for _ in range(3)]
    ex = worked_example(0)
    X = ex.X.astype(f32)
    Q, K, V = (X @ W.astype(f32) for W in (ex.W_q, ex.W_k, ex.W_v))  # (3, 4) @ (4, 4) -> (3, 4), float32
    n = X.shape[0]
    return (
        Case("random", *rand),
        Case("probe", *probe),
        Case("worked", Q, K, V),
        Case("worked_causal", Q, K, V, np.tril(np.ones((n, n), dtype=f32))),
    )


# =========================================================================== known mistakes


_MISTAKE_TEXT: dict[tuple[str, str], str] = {
    ("scale", "none"): "**No scaling**: the scores are never divided by √d_k. Divide `Q @ Kᵀ` by `d_k ** 0.5`.",
    ("scale", "d_k"): "**Scaled by d_k instead of √d_k**: you divide by d_k = 16 where the formula divides by "
                      "√16 = 4. Use `d_k ** 0.5` (or `math.sqrt(d_k)`).",
    ("scale", "times"): "**Multiplied by √d_k instead of dividing**: the scores must get *smaller*, `/ d_k ** 0.5`.",
    ("scale", "sqrt_T"): "**d_k taken from the wrong dimension**: you divide by √seq_len (√5) instead of √d_k "
                         "(√16). d_k is the *last* dimension: `Q.size(-1)`.",
    ("scores", "QK"): "**K not transposed**: `Q @ K` multiplies the wrong dimensions. Use "
                      "`Q @ K.transpose(-2, -1)`.",
    ("scores", "K_batch"): "**K transposed over the batch dimension**: `K.transpose(0, 1)` swaps batch and "
                           "sequence. Transpose the last two dimensions: `K.transpose(-2, -1)`.",
    ("scores", "K_all"): "**`K.T` on a 3-D tensor reverses all three dimensions** (batch included). Use "
                         "`K.transpose(-2, -1)` (or `K.mT`).",
    ("scores", "KQ"): "**Queries and keys swapped**: `K @ Qᵀ` is the transpose of the score matrix, so each row "
                      "now belongs to a key. Use `Q @ K.transpose(-2, -1)`.",
    ("softmax", "queries"): "**Softmax over the wrong dimension**: `dim=-2` (`dim=1` on these 3-D tensors) "
                            "normalises each *column*, over the queries. Use `dim=-1`, so that each query's row "
                            "sums to 1.",
    ("softmax", "batch"): "**Softmax over the batch dimension**: `dim=0` (also what `F.softmax` picks on a 3-D "
                          "tensor when `dim` is left out) mixes different sequences. Use `dim=-1`.",
    ("softmax", "none"): "**No softmax**: the scores go straight into the weighted sum, so the weights are not "
                         "a probability distribution. Apply `torch.softmax(scores, dim=-1)`.",
    ("returns", "scores"): "**Returned the scores instead of the weighted values**: the output is "
                           "`weights @ V`, one d_v-vector per query.",
    ("returns", "weights"): "**Returned the attention weights instead of the output**: multiply them by V: "
                            "`output = weights @ V`.",
}


@dataclass(frozen=True)
class Mistake:
    """A known way of getting attention wrong; ``Mistake()`` (all defaults) is the correct formula.

    Attributes:
        scale: ``"sqrt_d_k"`` (correct), ``"none"``, ``"d_k"``, ``"times"`` (× √d_k), ``"sqrt_T"``.
        scores: ``"QKt"`` (correct ``Q Kᵀ``), ``"QK"`` (K not transposed), ``"K_batch"``
            (``K.transpose(0, 1)``), ``"K_all"`` (``K.T``: all dimensions reversed), ``"KQ"`` (``K Qᵀ``).
        softmax: ``"last"`` (correct, ``dim=-1``), ``"queries"`` (``dim=-2``), ``"batch"`` (``dim=0``),
            ``"none"``.
        returns: ``"output"`` (correct, ``A V``), ``"scores"``, ``"weights"``.
    """

    scale: str = "sqrt_d_k"
    scores: str = "QKt"
    softmax: str = "last"
    returns: str = "output"

    def wrong_parts(self) -> list[tuple[str, str]]:
        """The ``(part, value)`` pairs that differ from the correct formula."""
        correct = Mistake()
        return [(p, getattr(self, p)) for p in ("scale", "scores", "softmax", "returns")
                if getattr(self, p) != getattr(correct, p)]

    def describe(self) -> list[str]:
        """One sentence per wrong part, in the order the computation runs."""
        return [_MISTAKE_TEXT[part] for part in self.wrong_parts()]


MISTAKE_OPTIONS: dict[str, tuple[str, ...]] = {
    "scale": ("sqrt_d_k", "none", "d_k", "times", "sqrt_T"),
    "scores": ("QKt", "QK", "K_batch", "K_all", "KQ"),
    "softmax": ("last", "queries", "batch", "none"),
    "returns": ("output", "scores", "weights"),
}


def all_mistakes() -> list[Mistake]:
    """Every combination of known mistakes, fewest mistakes first (the correct formula excluded).

    Combinations that compute the same thing are listed once (returning the scores makes the
    softmax irrelevant; skipping the softmax and returning the weights is returning the scores).
    """
    found = []
    for combo in product(*MISTAKE_OPTIONS.values()):
        m = Mistake(*combo)
        if m.returns == "scores" and m.softmax != "last":
            continue
        if m.returns == "weights" and m.softmax == "none":
            continue
        if m.wrong_parts():
            found.append(m)
    return sorted(found, key=lambda m: len(m.wrong_parts()))


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax as PyTorch computes it: a row of only ``-inf`` gives NaN instead of raising."""
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - np.where(np.isfinite(m), m, 0.0))
        return e / e.sum(axis=axis, keepdims=True)


def mistaken_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mistake: Mistake = Mistake(), mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention computed with `mistake` (float64). ``Mistake()`` gives the correct
    ``(softmax(Q Kᵀ/√d_k) V, weights)``; a mask (1 = may attend) fills forbidden scores with ``-inf``.

    Raises `ValueError` when the mistaken shapes cannot be multiplied (as PyTorch would raise).
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    d_k, T = Q.shape[-1], Q.shape[-2]
    if mistake.scores == "QKt":
        scores = Q @ np.swapaxes(K, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    elif mistake.scores == "QK":
        scores = Q @ K  # (..., T, d_k) @ (..., T, d_k): only runs when T == d_k
    elif mistake.scores == "K_batch":
        scores = Q @ np.swapaxes(K, 0, 1)  # K.transpose(0, 1): (B, T, d_k) -> (T, B, d_k)
    elif mistake.scores == "K_all":
        scores = Q @ K.transpose()  # K.T: (B, T, d_k) -> (d_k, T, B)
    elif mistake.scores == "KQ":
        scores = K @ np.swapaxes(Q, -1, -2)  # (..., T_k, d_k) @ (..., d_k, T_q) -> (..., T_k, T_q)
    else:
        raise ValueError(f"unknown scores variant {mistake.scores!r}")
    factor = {"sqrt_d_k": 1 / math.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k, "times": math.sqrt(d_k),
              "sqrt_T": 1 / math.sqrt(T)}[mistake.scale]
    scores = scores * factor
    if mask is not None:
        scores = np.where(np.asarray(mask) == 0, -np.inf, scores)  # (T_q, T_k) broadcast over the batch
    if mistake.returns == "scores":
        return scores, scores
    axis = {"last": -1, "queries": -2, "batch": 0}.get(mistake.softmax)
    weights = scores if axis is None else _softmax(scores, axis)
    if mistake.returns == "weights":
        return weights, weights
    return weights @ V, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def mistake_function(mistake: Mistake) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """A PyTorch-facing function that makes `mistake`, with the student's signature (for demos and tests)."""

    def attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None):
        arrays = [t.detach().numpy() for t in (Q, K, V)]
        out, weights = mistaken_attention(*arrays, mistake, None if mask is None else mask.numpy())
        return torch.from_numpy(out).float(), torch.from_numpy(weights).float()

    return attention


def _same(a: np.ndarray | None, b: np.ndarray | None, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    return (a is not None and b is not None and a.shape == b.shape
            and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)))


def match_mistake(case: Case, output: np.ndarray) -> Mistake | None:
    """The simplest known mistake whose output on `case` equals `output` (None if none does)."""
    for m in all_mistakes():
        try:
            out, _ = mistaken_attention(case.Q, case.K, case.V, m, case.mask)
        except ValueError:
            continue
        if _same(output, out):
            return m
    return None


# =========================================================================== the sandbox


@dataclass
class CaseResult:
    """What the student's function did on one `Case` (decoded, validated)."""

    ok: bool
    error: str | None = None
    kind: str = "none"  # "pair" (output, weights) | "single" (output only) | "other"
    output: np.ndarray | None = None
    weights: np.ndarray | None = None
    output_desc: str = ""
    weights_desc: str = ""
    mask_note: str | None = None


@dataclass
class RunResult:
    """Everything that came back from one run, before any verdict."""

    loaded: bool = False
    load_reported: bool = False
    load_error: str | None = None
    found: bool = True
    callables: list[str] = field(default_factory=list)
    cases: dict[str, CaseResult] = field(default_factory=dict)
    done: bool = False
    used_builtin: bool = False
    incident: str | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    elapsed_s: float = 0.0
    run_s: float | None = None
    isolation: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    sandbox_uid: int | None = None
    #: What the self-test's probe was answered (``{"open": "EPERM", "socket": "EPERM"}``), if it ran.
    probe: dict[str, str] = field(default_factory=dict)


_MARKDOWN_SPECIALS = str.maketrans({c: "\\" + c for c in "\\`*_[]$<>~|"})


def escape_markdown(text: str) -> str:
    """`text` with Markdown's special characters escaped: what the student's code says is shown as typed.

    Check messages are Markdown; an error message from the submission must not turn into a link,
    an image, LaTeX (``$``) or a coloured ``:red[...]`` directive on the page.
    """
    return text.translate(_MARKDOWN_SPECIALS)


def _describe(info: dict[str, Any] | None) -> str:
    if not isinstance(info, dict):
        return "nothing"
    kind = escape_markdown(str(info.get("type", "?"))[:40])
    shape = info.get("shape")
    if isinstance(shape, list):
        return f"a {kind} of shape {tuple(shape)} ({escape_markdown(str(info.get('dtype'))[:20])})"
    return f"a {kind}"


def _decode_array(info: Any) -> np.ndarray | None:
    """The array in an encoded value, or None if absent or malformed (the data is untrusted)."""
    if not isinstance(info, dict) or info.get("data") is None or not isinstance(info.get("shape"), list):
        return None
    try:
        arr = np.asarray(info["data"], dtype=np.float64)
        shape = tuple(int(s) for s in info["shape"])
    except (TypeError, ValueError, OverflowError):
        return None
    return arr if arr.shape == shape else None


def _size(n: int) -> str:
    """A byte count in words: ``1 MB``, ``4 KB``."""
    return f"{n / 2**20:g} MB" if n >= 2**20 else f"{n / 2**10:g} KB"


_HINTS = (
    (("MemoryError", "can't allocate memory"),
     f"your code asked for more memory than the sandbox allows (about {MEMORY_BUDGET_BYTES >> 20} MB on top of "
     "PyTorch)"),
    (("[Errno 11]", "can't start new thread"), "the sandbox allows no new processes or threads"),
    (("[Errno 1] Operation not permitted",),
     "the sandbox lets your code compute, print and raise, and nothing else: the kernel refuses it every file, "
     "network connection, new process and thread"),
    (("No module named",),
     "the sandbox can import only what it loaded before your code started: torch, numpy, math and the "
     "standard modules they use"),
    (("[Errno 27]", "File too large"), f"files in the sandbox are limited to {_size(FILE_SIZE_BYTES)}"),
)


def student_error(error: str) -> str:
    """An error reported by the submission, Markdown-escaped, plus a plain-words reason when it comes
    from one of the sandbox's limits."""
    text = escape_markdown(error)
    for needles, hint in _HINTS:
        if any(n in error for n in needles):
            return f"{text}. In other words: {hint}."
    return text


def decode_case(msg: dict[str, Any]) -> CaseResult:
    """Turn one ``case`` message of the runner into a `CaseResult` (never raises)."""
    if not msg.get("ok"):
        return CaseResult(ok=False, error=student_error(str(msg.get("error") or "failed")[:800]))
    kind = msg.get("kind") if msg.get("kind") in ("pair", "single", "other") else "other"
    res = CaseResult(ok=True, kind=kind, output=_decode_array(msg.get("output")),
                     output_desc=_describe(msg.get("output")))
    if kind == "pair":
        res.weights = _decode_array(msg.get("weights"))
        res.weights_desc = _describe(msg.get("weights"))
    if isinstance(msg.get("mask_note"), str):
        res.mask_note = escape_markdown(msg["mask_note"][:800])
    return res


def run_trusted(fn: Callable[..., Any], cases: tuple[Case, ...] | None = None) -> RunResult:
    """Run a TRUSTED function (the reference solution, a known mistake) in this process.

    Goes through the very code the sandbox uses (`core.exercise_runner.run_case`) and the
    same JSON encoding, so the result is what the sandbox would report. Never use it on
    submitted code: that is `check_submission`'s job.
    """
    cases = exercise_cases() if cases is None else cases
    run = RunResult(loaded=True, done=True, isolation="in-process (trusted code only)")
    for case in cases:
        msg = json.loads(json.dumps(exercise_runner.run_case(fn, case.as_json())))
        run.cases[case.name] = decode_case(msg)
    return run


# =========================================================================== verdicts


def _fmt_row(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:.3f}" for x in v) + "]"


def _runs_check(run: RunResult) -> tuple[Check, CaseResult | None]:
    res = run.cases.get("random")
    if run.incident and (res is None or not res.ok):
        return Check(CHECK_RUNS, False, run.incident), None
    if not run.loaded:
        if run.load_error:
            msg = f"Your code raised an error while loading: {run.load_error}"
            if run.load_error.startswith("SystemExit"):
                msg += ". The checker needs the process to keep running: remove `sys.exit()`/`exit()`/`quit()`."
            return Check(CHECK_RUNS, False, msg), None
        if not run.found:
            others = f" (it defines: {', '.join(run.callables)})" if run.callables else ""
            return Check(CHECK_RUNS, False, f"There is no function called `{FUNCTION_NAME}`{others}: "
                                            "keep the name and signature from the skeleton."), None
        return Check(CHECK_RUNS, False, f"`{FUNCTION_NAME}` exists but is not a function."), None
    if res is None:
        return Check(CHECK_RUNS, False, run.incident or "Your function was not called (the run stopped)."), None
    shape = f"({BATCH}, {SEQ_LEN}, {D_K})"
    if not res.ok:
        return Check(CHECK_RUNS, False, f"Called on Q, K, V of shape {shape}, your function raised {res.error}"), None
    if run.used_builtin:
        return Check(CHECK_RUNS, False, "Your function calls `torch.nn.functional.scaled_dot_product_attention` "
                                        "itself: the exercise is to write it from the formula."), res
    if res.kind == "other":
        hint = " Did you forget `return`?" if res.output_desc == "a NoneType" else ""
        return Check(CHECK_RUNS, False, f"Your function returned {res.output_desc}; it should return "
                                        f"`(output, weights)`, two tensors.{hint}"), None
    if res.output is None:
        return Check(CHECK_RUNS, False, f"Your function returned {res.output_desc}, which is not a tensor of "
                                        "numbers the checker can read."), None
    extra = ""
    if run.stdout_bytes > OUTPUT_CAP_BYTES:
        extra = f" (It printed {run.stdout_bytes / 1e6:.1f} MB; only the first {_size(OUTPUT_CAP_BYTES)} are kept.)"
    if res.kind == "single":
        return Check(CHECK_RUNS, True, "It ran and returned only the output. That is enough for the shape, "
                                       "allclose and worked-example checks; return `(output, weights)` like the "
                                       "lesson's version to unlock the two weight checks." + extra), res
    return Check(CHECK_RUNS, True, f"It ran on Q, K, V of shape {shape} and returned `(output, weights)`.{extra}"), res


def evaluate(run: RunResult, cases: tuple[Case, ...]) -> ExerciseReport:
    """Turn a run into the checklist and the diagnoses. Pure: only the data in `run` is used."""
    by_name = {c.name: c for c in cases}
    rand = by_name["random"]
    expected_out = torch_scaled_dot_product_attention(rand.Q, rand.K, rand.V)  # (2, 5, 16), float32
    checks: list[Check] = []
    skipped = _not_run(run)

    runs, res = _runs_check(run)
    checks.append(runs)
    out = None if res is None else res.output
    weights = None if res is None or res.kind != "pair" else res.weights

    # 2. shape
    want = (BATCH, SEQ_LEN, D_K)
    if out is None:
        checks.append(Check(CHECK_SHAPE, False, skipped))
    elif out.shape == want:
        checks.append(Check(CHECK_SHAPE, True, f"The output has shape {want}: one {D_K}-vector per token."))
    else:
        checks.append(Check(CHECK_SHAPE, False, f"The output has shape {out.shape}, expected {want} "
                                                "(batch, seq_len, d_v)."))

    # 3. weights rows sum to 1
    checks.append(_rows_check(run, res, weights))

    # 4. allclose with PyTorch
    if out is None:
        checks.append(Check(CHECK_ALLCLOSE, False, skipped))
    elif out.shape != expected_out.shape:
        checks.append(Check(CHECK_ALLCLOSE, False, f"Cannot compare: your output has shape {out.shape}, "
                                                   f"PyTorch's has {expected_out.shape}."))
    else:
        diff = max_abs_diff(out, expected_out) if np.all(np.isfinite(out)) else float("nan")
        ok = bool(np.allclose(out, expected_out, rtol=ALLCLOSE_RTOL, atol=ALLCLOSE_ATOL))
        msg = (f"`torch.allclose(yours, F.scaled_dot_product_attention(Q, K, V), atol={ALLCLOSE_ATOL:g})` is "
               f"{ok}: the largest difference is {diff:.2e}.")
        checks.append(Check(CHECK_ALLCLOSE, ok, msg))

    worked_check, worked_out = _worked_check(run, res is not None)
    checks.append(worked_check)
    causal_check, causal_w = _causal_check(run, by_name["worked_causal"], res is not None)
    checks.append(causal_check)

    return ExerciseReport(
        passed=all(c.passed for c in checks), checks=checks, diagnoses=diagnose(run, cases),
        incident=run.incident, stdout=run.stdout, stderr=run.stderr, worked_output=worked_out,
        causal_weights=causal_w, elapsed_s=run.elapsed_s, run_s=run.run_s, isolation=run.isolation,
        limits=run.limits, sandbox_uid=run.sandbox_uid,
    )


def _not_run(run: RunResult) -> str:
    if run.incident:
        return "Not checked: " + run.incident[0].lower() + run.incident[1:]
    return "Not checked: your function did not run (see the first check)."


def _rows_check(run: RunResult, res: CaseResult | None, weights: np.ndarray | None) -> Check:
    if res is None:
        return Check(CHECK_ROWS, False, _not_run(run))
    if res.kind == "single":
        return Check(CHECK_ROWS, False, "Your function returns only the output, so the weights cannot be checked: "
                                        "return `output, weights` (the weights after the softmax).")
    want = (BATCH, SEQ_LEN, SEQ_LEN)
    if weights is None:
        return Check(CHECK_ROWS, False, f"The second value returned is {res.weights_desc}, not a tensor of weights.")
    if weights.shape != want:
        return Check(CHECK_ROWS, False, f"The weights have shape {weights.shape}, expected {want}: one row per "
                                        "query, one column per key.")
    sums = weights.sum(axis=-1)
    if not np.all(np.isfinite(sums)):
        return Check(CHECK_ROWS, False, "Some weights are NaN or infinite.")
    dev = float(np.max(np.abs(sums - 1.0)))
    if dev <= ROW_SUM_ATOL and float(weights.min()) >= 0:
        return Check(CHECK_ROWS, True, f"`weights.sum(dim=-1)` is all ones (largest deviation {dev:.1e}).")
    if dev <= ROW_SUM_ATOL:
        return Check(CHECK_ROWS, False, f"The rows sum to 1 but some weights are negative ({weights.min():.3f}): "
                                        "they are not a softmax.")
    return Check(CHECK_ROWS, False, f"`weights.sum(dim=-1)` ranges from {sums.min():.3f} to {sums.max():.3f}, "
                                    "not all ones.")


def _worked_check(run: RunResult, ran: bool) -> tuple[Check, np.ndarray | None]:
    lesson = worked_example(0).output  # (3, 4), float64: the lesson's printed output
    res = run.cases.get("worked")
    if not ran or res is None:
        return Check(CHECK_WORKED, False, _not_run(run)), None
    if not res.ok:
        msg = f"On the worked example's Q, K, V of shape {lesson.shape[0]}×{lesson.shape[1]} (no batch "
        msg += f"dimension) your function raised {res.error}"
        return Check(CHECK_WORKED, False, msg), None
    out = res.output
    if out is None or out.shape != lesson.shape:
        got = res.output_desc if out is None else f"shape {out.shape}"
        return Check(CHECK_WORKED, False, f"Expected a {lesson.shape} output, got {got}."), None
    diff = max_abs_diff(out, lesson) if np.all(np.isfinite(out)) else float("inf")
    if diff <= WORKED_ATOL:
        return Check(CHECK_WORKED, True, f"Your first row is {_fmt_row(out[0])}, the lesson's is "
                                         f"{_fmt_row(lesson[0])} (largest difference {diff:.1e}).",), out
    return Check(CHECK_WORKED, False, f"Your first row is {_fmt_row(out[0])}, the lesson's is "
                                      f"{_fmt_row(lesson[0])} (largest difference {diff:.3g})."), out


def _causal_check(run: RunResult, case: Case, ran: bool) -> tuple[Check, np.ndarray | None]:
    """The stretch: exact zeros above the diagonal, and the same output as PyTorch with the mask."""
    assert case.mask is not None
    res = run.cases.get(case.name)
    if not ran or res is None:
        return Check(CHECK_CAUSAL, False, _not_run(run)), None
    if not res.ok:
        msg = f"With the causal mask `torch.tril(torch.ones(3, 3))` your function raised {res.error}"
        if "positional argument" in (res.error or ""):
            msg += ". Add a fourth parameter, `mask=None`, as in the skeleton."
        return Check(CHECK_CAUSAL, False, msg), None
    allowed = case.mask.astype(bool)
    expected = torch_scaled_dot_product_attention(case.Q, case.K, case.V, allowed)  # (3, 4), float32
    note = ""
    if res.mask_note:
        note = (f" (It needed a boolean mask: with the lesson's mask of 1.0s and 0.0s it raised "
                f"{res.mask_note}; `mask == 0` works for both.)")
    if res.kind != "pair" or res.weights is None:
        same = _same(res.output, expected)
        return Check(CHECK_CAUSAL, False, "Return `(output, weights)` so that the zeros can be checked"
                                          + (" (your masked output does match PyTorch's)." if same else ".")), None
    w = res.weights
    if w.shape != allowed.shape:
        return Check(CHECK_CAUSAL, False, f"The masked weights have shape {w.shape}, expected {allowed.shape}."), None
    above = w[~allowed]
    if np.all(above == 0):
        if _same(res.output, expected, rtol=1e-5, atol=1e-5):
            return Check(CHECK_CAUSAL, True, "Every weight above the diagonal is exactly 0, and the output matches "
                                             "`F.scaled_dot_product_attention` with the same mask." + note), w
        sums = w.sum(axis=-1)
        if np.all(np.isfinite(sums)) and np.max(np.abs(sums - 1)) > ROW_SUM_ATOL and np.all(w >= 0):
            return Check(CHECK_CAUSAL, False, "The weights above the diagonal are exactly 0, but the rows sum to "
                                              f"{sums.min():.3f} … {sums.max():.3f}, not 1: you zeroed the weights "
                                              "after the softmax. Mask the *scores* (with -inf) before the "
                                              "softmax instead." + note), w
        return Check(CHECK_CAUSAL, False, "The weights above the diagonal are exactly 0, but the masked output "
                                          "differs from PyTorch's: fix the unmasked checks first." + note), w
    return Check(CHECK_CAUSAL, False, _mask_diagnosis(run, case, w) + note), w


def _mask_diagnosis(run: RunResult, case: Case, w: np.ndarray) -> str:
    allowed = case.mask.astype(bool) if case.mask is not None else None
    assert allowed is not None
    T = allowed.shape[0]
    unmasked = run.cases.get("worked")
    if unmasked is not None and _same(w, unmasked.weights):
        return ("Your mask has no effect: the weights are the same as without it. Before the softmax, set the "
                "forbidden scores to -inf: `scores.masked_fill(mask == 0, float('-inf'))`.")
    rows = range(T - 1)  # every row but the last still has a future key to (wrongly) attend to
    above = w[~allowed]
    if all(np.all(np.abs(w[i, : i + 1]) < 1e-6) for i in rows) and np.any(np.nan_to_num(above) > 0):
        msg = ("**Mask polarity reversed**: the weights on and below the diagonal are 0 and those above it are "
               "not, so each token attends only to the future. The mask is 1 where attending is *allowed*: "
               "fill where `mask == 0`, not where `mask == 1`.")
        if np.isnan(w[T - 1]).any():
            msg += " (The last row has no key left at all, hence the NaN.)"
        return msg
    if np.all(np.isfinite(above)) and float(np.max(np.abs(above))) < 1e-6:
        return (f"Almost: the weights above the diagonal are tiny ({np.max(np.abs(above)):.1e}) but not exactly 0. "
                "Fill with `float('-inf')`, whose exponential is exactly 0.")
    scores = case.Q.astype(np.float64) @ case.K.astype(np.float64).T / math.sqrt(case.Q.shape[-1])  # (3, 3)
    if _same(w, _softmax(np.where(allowed, scores, 0.0), -1)):
        return ("You set the forbidden scores to 0, but e⁰ = 1, so future tokens still get weight. "
                "Fill them with `float('-inf')` instead.")
    return (f"The weights above the diagonal are not zero (the largest is {np.max(np.abs(np.nan_to_num(above))):.3f}): "
            "tokens still attend to the future.")


def diagnose(run: RunResult, cases: tuple[Case, ...]) -> list[str]:
    """Recognise the usual mistakes by comparing the returned tensors with known wrong variants."""
    by_name = {c.name: c for c in cases}
    found: list[str] = []
    rand = run.cases.get("random")
    probe = run.cases.get("probe")
    worked = run.cases.get("worked")
    expected = {name: mistaken_attention(c.Q, c.K, c.V, mask=c.mask) for name, c in by_name.items()}

    # Which case shows the mistake: the lesson's shape if the function ran on it, else the square probe.
    for name, res in (("random", rand), ("probe", probe)):
        if res is None or not res.ok or res.output is None:
            continue
        exp_out, exp_w = expected[name]
        if res.kind == "pair" and _same(res.output, exp_w) and _same(res.weights, exp_out):
            found.append("**Output and weights swapped**: you return `(weights, output)`; the lesson's order is "
                         "`(output, weights)`.")
            break
        if _same(res.output, exp_out):
            if res.kind == "pair" and res.weights is not None and not _same(res.weights, exp_w):
                found.append("Your output is right, but the second value you return is not the attention weights: "
                             "return the weights *after* the softmax.")
            break
        mistake = match_mistake(by_name[name], res.output)
        if mistake is not None:
            found.extend(mistake.describe())
        elif _same(res.output, exp_out, rtol=1e-2, atol=1e-3):
            found.append("Close, but not within `allclose`'s tolerance: did you compute in lower precision "
                         f"(float16 / bfloat16)? Your output is {res.output_desc}.")
        else:
            found.append("Your output does not match any of the usual mistakes. Compare each step with the formula: "
                         "scores `Q @ K.transpose(-2, -1)`, divided by `Q.size(-1) ** 0.5`, `softmax(dim=-1)`, "
                         "then `@ V`.")
        break
    if rand is not None and rand.ok and worked is not None and not worked.ok:
        found.append("Your function assumes a batch dimension: it works on (2, 5, 16) tensors but fails on the "
                     "worked example's 2-D (3, 4) ones. Count dimensions from the end: `K.transpose(-2, -1)`, "
                     "`softmax(dim=-1)`, `Q.size(-1)`.")
    return found


# =========================================================================== demos for the page's quizzes


@dataclass(frozen=True)
class MistakeDemo:
    """What one known mistake does on the lesson's random test: computed, for "predict, then reveal"."""

    mistake: Mistake
    allclose: bool
    max_abs_diff: float
    first_failed_check: str | None
    largest_weight: float
    largest_weight_correct: float
    row_sum_range: tuple[float, float]


def mistake_demo(mistake: Mistake) -> MistakeDemo:
    """Run the known `mistake` through the same checks as a submission (in-process: it is trusted code)."""
    cases = exercise_cases()
    report = evaluate(run_trusted(mistake_function(mistake), cases), cases)
    rand = cases[0]
    out, w = mistaken_attention(rand.Q, rand.K, rand.V, mistake)
    ref = torch_scaled_dot_product_attention(rand.Q, rand.K, rand.V)  # (2, 5, 16)
    _, w_ok = mistaken_attention(rand.Q, rand.K, rand.V)
    close = out.shape == ref.shape and bool(np.allclose(out, ref, rtol=ALLCLOSE_RTOL, atol=ALLCLOSE_ATOL))
    sums = w.sum(axis=-1)
    return MistakeDemo(
        mistake=mistake,
        allclose=close,
        max_abs_diff=max_abs_diff(out, ref) if out.shape == ref.shape else float("nan"),
        first_failed_check=next((c.name for c in report.checks if not c.passed), None),
        largest_weight=float(w.max()),
        largest_weight_correct=float(w_ok.max()),
        row_sum_range=(float(sums.min()), float(sums.max())),
    )
