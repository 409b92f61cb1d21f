"""What a run of a submission produced, decoded from the runner's messages: one record for every path.

The sandbox, the offline command and the trusted in-process runs all end in a `RunResult` (one
`CaseResult` per test case), built from the same JSON messages by the same decoding. Everything
in it that came from the student's code is untrusted data, checked here and kept as plain text (the page
escapes it for Markdown, `ui.layout.as_markdown`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exercise import runner
from exercise.cases import Case, exercise_cases
from exercise.limits import FILE_SIZE_BYTES, MEMORY_BUDGET_BYTES, bytes_in_words


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
    mask_note: str | None = None  # the error with the lesson's float mask, when a boolean one worked
    batch_note: str | None = None  # the error without a batch dimension, when a batch of one worked
    batched_error: str | None = None  # the error with a batch of one too, when both raised
    as_lengths: CaseResult | None = None  # what the function returned given the mask's valid lengths instead


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


def _describe(info: dict[str, Any] | None) -> str:
    if not isinstance(info, dict):
        return "nothing"
    kind = str(info.get("type", "?"))[:40]
    shape = info.get("shape")
    if isinstance(shape, list):
        return f"a {kind} of shape {tuple(shape)} ({str(info.get('dtype'))[:20]})"
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
    (("[Errno 27]", "File too large"), f"files in the sandbox are limited to {bytes_in_words(FILE_SIZE_BYTES)}"),
)


def student_error(error: str) -> str:
    """An error reported by the submission, plus a plain-words reason when it comes from one of the sandbox's
    limits."""
    for needles, hint in _HINTS:
        if any(n in error for n in needles):
            return f"{error}. In other words: {hint}."
    return error


def decode_case(msg: dict[str, Any]) -> CaseResult:
    """Turn one ``case`` message of the runner into a `CaseResult` (never raises)."""
    if not msg.get("ok"):
        res = CaseResult(ok=False, error=student_error(str(msg.get("error") or "failed")[:800]))
        if isinstance(msg.get("batched_error"), str):
            res.batched_error = student_error(msg["batched_error"][:800])
        if isinstance(msg.get("as_lengths"), dict):
            res.as_lengths = decode_case({**msg["as_lengths"], "ok": True})
        return res
    kind = msg.get("kind") if msg.get("kind") in ("pair", "single", "other") else "other"
    res = CaseResult(ok=True, kind=kind, output=_decode_array(msg.get("output")),
                     output_desc=_describe(msg.get("output")))
    if kind == "pair":
        res.weights = _decode_array(msg.get("weights"))
        res.weights_desc = _describe(msg.get("weights"))
    if isinstance(msg.get("mask_note"), str):
        res.mask_note = msg["mask_note"][:800]
    if isinstance(msg.get("batch_note"), str):
        res.batch_note = msg["batch_note"][:800]
    return res


def run_trusted(fn: Callable[..., Any], cases: tuple[Case, ...] | None = None) -> RunResult:
    """Run a TRUSTED function (the reference solution, a known mistake) in this process.

    Goes through the very code the sandbox uses (`exercise.runner.run_case`) and the
    same JSON encoding, so the result is what the sandbox would report. Never use it on
    submitted code: that is `check_submission`'s job.
    """
    cases = exercise_cases() if cases is None else cases
    run = RunResult(loaded=True, done=True, isolation="in-process (trusted code only)")
    for case in cases:
        msg = json.loads(json.dumps(runner.run_case(fn, case.as_json())))
        run.cases[case.name] = decode_case(msg)
    return run
