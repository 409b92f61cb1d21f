"""How a submission is called and what it reports: the code that runs next to the student's.

`run_source` compiles the student's source, looks up ``scaled_dot_product_attention``, calls
it on every test case (`run_case`) and hands one JSON-able message per step to `send`:
``load``, one ``case`` per test input, then ``done``. It is used in two places:

* inside the sandbox (`exercise.zygote`), where `send` writes to the result pipe and the
  parent treats every message as untrusted data, making every verdict itself;
* in-process, for trusted functions (`exercise.results.run_trusted`) and for the student's own
  code on their own machine (``python -m exercise``).

It needs only the standard library and PyTorch.
"""

from __future__ import annotations

import builtins
import linecache
import time
import traceback
from collections.abc import Callable
from typing import Any

from exercise.reading import read_source

SOURCE_NAME = "<your code>"
FUNCTION_NAME = "scaled_dot_product_attention"
#: Tensors with more elements than this come back as a shape only (the tests use at most 160).
MAX_ELEMENTS = 4096
#: Longest error message sent back, in characters.
MAX_MESSAGE = 600
#: The optional calls (a case marked ``optional``) are made only if the calls before them took less CPU time (s).
OPTIONAL_BUDGET_S = 0.5


# --------------------------------------------------------------------------- encoding results


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    """`text` cut to `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error(exc: BaseException) -> str:
    """One line for the student: exception type, message, and the line of *their* code it came from."""
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a student's exception may have a broken __str__
        message = "(the exception's message could not be printed)"
    name = type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.filename == SOURCE_NAME:
        text = (exc.text or "").strip()
        where = f" on line {exc.lineno}" + (f": {short(text, 120)}" if text else "")
        return short(f"{name}{where} ({exc.msg})")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SOURCE_NAME]
    where = ""
    if frames:
        last = frames[-1]
        line = (last.line or "").strip()
        where = f" (line {last.lineno}" + (f": {short(line, 120)}" if line else "") + ")"
    return short(f"{name}: {message}{where}" if message else f"{name}{where}")


def encode_value(x: Any) -> dict[str, Any]:
    """A returned value as JSON-able data: ``type``, and for tensors/arrays ``shape``, ``dtype``, ``data``.

    ``data`` is a nested list of floats (``None`` above `MAX_ELEMENTS` elements or if the
    value cannot be converted); the parent re-checks everything.
    """
    import torch

    info: dict[str, Any] = {"type": type(x).__name__, "shape": None, "dtype": None, "data": None}
    try:
        if isinstance(x, torch.Tensor):
            t = x.detach()
        elif hasattr(x, "__array__") or isinstance(x, (list, tuple, float, int)):
            t = torch.as_tensor(x)
        else:
            return info
        info["shape"] = [int(s) for s in t.shape]
        info["dtype"] = str(t.dtype)
        if t.numel() <= MAX_ELEMENTS and (t.is_floating_point() or t.dtype in (torch.int32, torch.int64, torch.bool)):
            info["data"] = t.to("cpu", torch.float64).tolist()
    except BaseException as exc:  # noqa: BLE001 - anything the student returns must be survivable
        info["error"] = describe_error(exc)
    return info


def split_result(result: Any) -> dict[str, Any]:
    """Classify what the function returned: ``(output, weights)`` ("pair"), one tensor ("single"), or "other"."""
    import torch

    if isinstance(result, (tuple, list)) and len(result) == 2:
        return {"kind": "pair", "output": encode_value(result[0]), "weights": encode_value(result[1])}
    if isinstance(result, torch.Tensor) or hasattr(result, "__array__"):
        return {"kind": "single", "output": encode_value(result), "weights": None}
    return {"kind": "other", "output": encode_value(result), "weights": None,
            "returned": short(type(result).__name__, 80)}


def _without_batch(result: Any) -> Any:
    """`result` of a call on a batch of one, with that batch dimension taken off every tensor in it."""
    def drop(x: Any) -> Any:
        shape = getattr(x, "shape", None)
        return x[0] if shape is not None and len(shape) >= 1 and shape[0] == 1 else x

    if isinstance(result, (tuple, list)) and len(result) == 2:
        return drop(result[0]), drop(result[1])
    return drop(result)


def valid_lengths(mask: Any, batch: int) -> Any:
    """The mask as valid lengths, ``(batch, T)``: ``lengths[b, i] = mask[i].sum()``, the number of keys query i may
    see (the form of ``valid_lens`` in the d2l.ai textbook's ``masked_softmax``; a causal mask is ``1, 2, …, T``)."""
    import torch

    return mask.sum(dim=-1).to(torch.int64).expand(batch, -1)  # (T, T) -> (T,) -> (batch, T)


def key_padding(mask: Any, batch: int) -> Any:
    """A key-padding mask, one value per key, ``(batch, T)``: 1 for every key but the last, which is padding (the form
    of BERT's ``attention_mask``)."""
    import torch

    padding = torch.ones(batch, mask.shape[-1], dtype=mask.dtype)  # (batch, T_k)
    padding[:, -1] = 0
    return padding


def run_case(fn: Callable[..., Any], case: dict[str, Any]) -> dict[str, Any]:
    """Call ``fn(Q, K, V)`` (or ``fn(Q, K, V, mask)``) on one test case, in float32, never raising.

    `case` holds ``name``, ``Q``, ``K``, ``V`` and ``mask`` (nested lists or arrays; ``mask``
    may be None). A masked case uses the lesson's float mask of 1s and 0s; if that raises, it
    is retried once with the same mask as booleans, and the first error is kept as a note
    (``mask_note``), or reported if the booleans raise too. A case without a batch dimension that raises is
    retried once with a batch of one (``Q.unsqueeze(0)``, the mask as it is) and the batch taken off the
    results; the first error is kept as ``batch_note``. A function written for batches only is then judged on
    its formula. If the batch of one raises too, the case fails with the first error, and the batch's is kept
    as ``batched_error``. When every call with the mask raised, the function is called once more with the
    mask's valid lengths (`valid_lengths`, on the batched input) and once with a key-padding mask (`key_padding`),
    and what they returned is kept as ``as_lengths`` and ``as_padding``.
    """
    import torch

    out: dict[str, Any] = {"stage": "case", "name": case["name"], "ok": False}
    mask = None if case.get("mask") is None else torch.tensor(case["mask"], dtype=torch.float32)
    q, k, v = (torch.tensor(case[name], dtype=torch.float32) for name in ("Q", "K", "V"))
    try:
        try:
            result = _call(fn, (q, k, v), mask, out)
        except Exception as first:  # noqa: BLE001
            if q.dim() != 2:
                _probe_lengths(fn, (q, k, v), mask, out, unbatch=False)
                raise
            batched = (q[None], k[None], v[None])  # (1, T, d) in, the 1 taken off again
            try:
                result = _without_batch(_call(fn, batched, mask, out))
            except Exception as second:  # noqa: BLE001 - the error to report is the one without the batch
                out["batched_error"] = describe_error(second)
                _probe_lengths(fn, batched, mask, out, unbatch=True)
                raise first from None
            out["batch_note"] = describe_error(first)
        out.update(split_result(result))
        out["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, MemoryError included
        out["error"] = describe_error(exc)
    return out


def _call(fn: Callable[..., Any], qkv: tuple[Any, Any, Any], mask: Any, out: dict[str, Any]) -> Any:
    """``fn(Q, K, V)``, or with `mask`: the lesson's float mask, then once as booleans if that raised (the first
    error kept in `out` as ``mask_note``); raises the float mask's error if both raised."""
    if mask is None:
        return fn(*qkv)
    try:
        return fn(*qkv, mask)
    except Exception as first:  # noqa: BLE001
        out["mask_note"] = describe_error(first)
        try:
            return fn(*qkv, mask.bool())
        except Exception:  # noqa: BLE001 - the error to report is the one with the lesson's mask
            out.pop("mask_note")
            raise first from None


def _probe_lengths(fn: Callable[..., Any], qkv: tuple[Any, Any, Any], mask: Any, out: dict[str, Any],
                   unbatch: bool) -> None:
    """Call `fn` on batched q, k, v with the mask's valid lengths, then with a key-padding mask; keep in `out` what
    each call returns, if it returns."""
    if mask is None:
        return
    n = qkv[0].shape[0]
    for key, other in (("as_lengths", valid_lengths(mask, n)), ("as_padding", key_padding(mask, n))):
        try:
            result = fn(*qkv, other)
        except Exception:  # noqa: BLE001 - the probe only adds a note
            continue
        out[key] = split_result(_without_batch(result) if unbatch else result)


def _is_pytorchs(result: dict[str, Any], case: dict[str, Any], sdpa: Callable[..., Any]) -> bool:
    """Whether the output in `result` is PyTorch's attention of `case` (unmasked), within ``allclose``'s tolerance."""
    import torch

    data = (result.get("output") or {}).get("data")
    if not result.get("ok") or data is None or case.get("mask") is not None:
        return False
    q, k, v = (torch.tensor(case[name], dtype=torch.float32) for name in ("Q", "K", "V"))
    expected = sdpa(q, k, v)
    output = torch.tensor(data, dtype=torch.float32)
    return output.shape == expected.shape and bool(torch.allclose(output, expected, rtol=1e-5, atol=1e-6))


def run_source(source: str, cases: list[dict[str, Any]], send: Callable[[dict[str, Any]], None]) -> None:
    """Compile and execute `source`, then call its ``scaled_dot_product_attention`` on every case.

    Messages, in order: ``load`` (``ok`` with what `read_source` found in the source, or the error, or the
    callables found instead), one ``case`` per case (see `run_case`; an ``optional`` case is skipped when the first
    case's output is PyTorch's attention, as nothing is then left to explain, and once the calls have taken
    `OPTIONAL_BUDGET_S`), and ``done`` with ``used_builtin``: whether the
    function called PyTorch's own ``F.scaled_dot_product_attention``. Never raises because of
    the source; code under ``if __name__ == "__main__":`` is not run.
    """
    import torch.nn.functional as F

    calls = [0]
    builtin_sdpa = F.scaled_dot_product_attention

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return builtin_sdpa(*args, **kwargs)

    linecache.cache[SOURCE_NAME] = (len(source), None, source.splitlines(True), SOURCE_NAME)
    namespace: dict[str, Any] = {"__name__": "submission", "__builtins__": builtins}
    F.scaled_dot_product_attention = spy
    try:
        try:
            code = compile(source, SOURCE_NAME, "exec", dont_inherit=True)
            reading = read_source(source)  # before the source runs and could change what reads it
            exec(code, namespace)  # noqa: S102 - the caller has put this process in the sandbox (or trusts it)
            fn = namespace.get(FUNCTION_NAME)
        except BaseException as exc:  # noqa: BLE001 - SyntaxError, SystemExit, MemoryError, ...
            send({"stage": "load", "ok": False, "error": describe_error(exc), "syntax": isinstance(exc, SyntaxError)})
            return
        if fn is None or not callable(fn):
            names = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
            send({"stage": "load", "ok": False, "found": fn is not None, "callables": names[:20], "error": None})
            return
        send({"stage": "load", "ok": True, "reading": reading})
        start = time.process_time()
        needed = True  # the optional calls only explain a wrong output
        for i, case in enumerate(cases):
            if case.get("optional") and (not needed or time.process_time() - start > OPTIONAL_BUDGET_S):
                continue
            result = run_case(fn, case)
            send(result)
            if i == 0:
                needed = not _is_pytorchs(result, case, builtin_sdpa)
        send({"stage": "done", "used_builtin": calls[0] > 0})
    finally:
        F.scaled_dot_product_attention = builtin_sdpa
