"""What a run of a submission produced, decoded from the runner's messages: one record for every path.

The sandbox, the offline command and the trusted in-process runs all end in a `RunResult` (one
`CaseResult` per test case), built from the same JSON messages by the same decoding. Everything
in it that came from the student's code is untrusted data, checked here and kept as plain text (the page
escapes it for Markdown, `ui.layout.as_markdown`).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from exercise import reading, runner
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
    as_padding: CaseResult | None = None  # ... and given a key-padding mask, (batch, T) with the last key padded


@dataclass(frozen=True)
class SourceLine:
    """A line of the student's source that a diagnosis points to (`exercise.reading`). Its texts came from the
    student's process: capped, and empty when they could not be shown as code (a backtick or a line break)."""

    number: int
    text: str = ""  # the whole line, stripped
    tensor: str = ""  # an unassigned masked_fill's: the tensor it was called on
    call: str = ""  # ... and the call itself
    name: str = ""  # a bounded function's, a constant's or an unread parameter's name
    value: float | None = None  # a constant's number, an unread parameter's position

    def shown(self) -> str:
        """``line 8 (`scores.masked_fill(mask == 0, -1e9)`)``, or ``line 8`` when the text cannot be shown."""
        return f"line {self.number}" + (f" (`{self.text}`)" if self.text else "")


@dataclass(frozen=True)
class SourceReading:
    """What `exercise.reading.read_source` found in the source: the lines of each kind, in order."""

    unassigned: tuple[SourceLine, ...] = ()
    softmax: tuple[SourceLine, ...] = ()
    is_causal: tuple[SourceLine, ...] = ()
    dropout: tuple[SourceLine, ...] = ()
    squash: tuple[SourceLine, ...] = ()
    constants: tuple[SourceLine, ...] = ()
    unread: tuple[SourceLine, ...] = ()
    fills: tuple[SourceLine, ...] = ()


@dataclass
class RunResult:
    """Everything that came back from one run, before any verdict."""

    loaded: bool = False
    load_reported: bool = False
    load_error: str | None = None
    found: bool = True
    callables: list[str] = field(default_factory=list)
    cases: dict[str, CaseResult] = field(default_factory=dict)
    reading: SourceReading = SourceReading()
    done: bool = False
    used_builtin: bool = False
    incident: str | None = None
    #: Whose the incident is: "timeout" (the code's time ran out), "server" (the checker's, the code was not
    #: judged), "empty", "too_long", "malformed" (nothing could be run); None for anything else the code did.
    incident_kind: str | None = None
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


def only_the_batch_failed(run: RunResult) -> bool:
    """Whether the function raised on the batched test but ran on the worked example (2-D, no batch)."""
    batched, worked = run.cases.get("random"), run.cases.get("worked")
    return (run.loaded and not run.incident and batched is not None and not batched.ok
            and worked is not None and worked.ok and worked.batch_note is None)


def not_run(run: RunResult) -> str:
    """Why a check could not be judged: the run's incident, or the function that did not run."""
    if run.incident:
        return "Not checked: " + run.incident[0].lower() + run.incident[1:]
    if only_the_batch_failed(run):
        return "Not checked: your function raised on the batched test (see the first check)."
    return "Not checked: your function did not run (see the first check)."



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


#: What a misspelled name is looked up in, by the owner an AttributeError names (``'Tensor' object``,
#: ``module 'torch'``): the tensor's methods, and the functions of the modules attention code uses.
_NAMES_OF = {"'Tensor' object": torch.Tensor, "'Parameter' object": torch.Tensor, "module 'torch'": torch,
             "module 'torch.nn.functional'": torch.nn.functional, "module 'torch.nn'": torch.nn,
             "module 'math'": math}
_NO_ATTRIBUTE = re.compile(r"^AttributeError: (.+?) has no attribute '(\w+)'")
_LINE = re.compile(r"\(line (\d+)")


def error_line(error: str) -> int | None:
    """The line of the student's code an error came from, as `exercise.runner.describe_error` writes it."""
    found = _LINE.findall(error)
    return int(found[-1]) if found else None


def misspelled_name(error: str) -> str | None:
    """For an AttributeError on a tensor or a module of PyTorch's: the closest real name, as Python's own
    tracebacks suggest one (``Did you mean `masked_fill`?``), and the line to correct it on."""
    found = _NO_ATTRIBUTE.match(error)
    owner = None if found is None else _NAMES_OF.get(found.group(1))
    if owner is None:
        return None
    name = found.group(2)
    names = [n for n in dir(owner) if not n.startswith("_") or name.startswith("_")]
    best = difflib.get_close_matches(name, names, n=1)
    if not best:
        return None
    line = error_line(error)
    where = "" if line is None else f" on line {line}"
    has = "A tensor has" if owner is torch.Tensor else f"`{found.group(1).removeprefix('module ')[1:-1]}` has"
    return f"Did you mean `{best[0]}`? {has} no `{name}`: correct the name{where}."


def student_error(error: str) -> str:
    """An error reported by the submission, plus a plain-words reason when it comes from one of the sandbox's
    limits, or the right name when it is a misspelled one."""
    for needles, hint in _HINTS:
        if any(n in error for n in needles):
            return f"{error}. In other words: {hint}."
    suggestion = misspelled_name(error)
    return error if suggestion is None else f"{error}. {suggestion}"


def _code_text(value: Any) -> str:
    """A text from the student's process that can be shown inside a code span, or ""."""
    if not isinstance(value, str) or any(c in value for c in "`\n\r") or len(value) > reading.MAX_TEXT:
        return ""
    return value


def decode_reading(msg: Any) -> SourceReading:
    """The ``reading`` of a ``load`` message as a `SourceReading` (never raises: the data is untrusted)."""
    if not isinstance(msg, dict):
        return SourceReading()

    def lines(kind: str) -> tuple[SourceLine, ...]:
        entries = msg.get(kind)
        if not isinstance(entries, list):
            return ()
        return tuple(SourceLine(e["line"], _code_text(e.get("text")), _code_text(e.get("tensor")),
                                _code_text(e.get("call")), _code_text(e.get("name")), _finite(e.get("value")))
                     for e in entries[: reading.MAX_LINES]
                     if isinstance(e, dict) and type(e.get("line")) is int and 0 < e["line"] < 1_000_000)

    return SourceReading(*(lines(kind) for kind in reading.KINDS))


def _finite(value: Any) -> float | None:
    """A number from the student's process, or None when it is not a finite float."""
    return value if type(value) is float and math.isfinite(value) else None


def decode_case(msg: dict[str, Any]) -> CaseResult:
    """Turn one ``case`` message of the runner into a `CaseResult` (never raises)."""
    if not msg.get("ok"):
        res = CaseResult(ok=False, error=student_error(str(msg.get("error") or "failed")[:800]))
        if isinstance(msg.get("batched_error"), str):
            res.batched_error = student_error(msg["batched_error"][:800])
        for probe in ("as_lengths", "as_padding"):
            if isinstance(msg.get(probe), dict):
                setattr(res, probe, decode_case({**msg[probe], "ok": True}))
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
