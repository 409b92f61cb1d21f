"""Reading a sandboxed child back: every pipe to its end, then its messages folded into a `RunResult`.

The child's stdout, stderr and result pipe, and the worker's status pipe, are read until each
one is closed, whatever order the data arrives in, so a last print that comes with (or after)
the ``done`` message is never lost. Everything but the status comes from the student's process
and is treated as untrusted data: capped, parsed line by line, and decoded by `exercise.results`.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import time
from dataclasses import dataclass
from typing import Any

from exercise.limits import MEMORY_BUDGET_BYTES, OUTPUT_CAP_BYTES, RESULT_CAP_BYTES
from exercise.numbers import message_template, number
from exercise.results import RunResult, decode_case, decode_reading, student_error


@dataclass
class Outcome:
    """Everything read from one child's four pipes."""

    messages: list[dict[str, Any]]
    stdout: bytearray
    stderr: bytearray
    totals: dict[str, int]
    status: dict[str, Any]
    ready_at: float | None
    end: float
    backstop: bool

    def fill(self, run: RunResult, timeout_s: float) -> None:
        run.stdout = _text(self.stdout, self.totals["stdout"])
        run.stderr = _text(self.stderr, self.totals["stderr"])
        run.stdout_bytes = self.totals["stdout"]
        if self.totals["result"] > RESULT_CAP_BYTES:
            run.incident = "The checker received more result data than it accepts; nothing could be checked."
        timed_out = None
        if self.status.get("timed_out") or self.backstop:
            timed_out = "startup" if self.ready_at is None else "run"
        absorb_messages(self.messages, run, timeout_s, timed_out)
        if isinstance(self.status.get("error"), str) and run.incident is None:
            run.incident = f"The checker is overloaded: {self.status['error'][:200]}. Please try again."
            run.incident_kind = "server"
        code = self.status.get("exit")
        clean_load_failure = run.load_reported and not run.loaded
        if isinstance(code, int) and run.incident is None and not run.done and not clean_load_failure \
                and run.probe == {}:
            run.incident = _exit_incident(code, run)
            run.incident_kind = "timeout" if code == -signal.SIGXCPU else None


def read_to_the_end(fds: dict[str, int], deadline: float) -> Outcome:
    """Read every pipe until it is closed (or the backstop `deadline` passes), keeping what the caps allow."""
    caps = {"stdout": OUTPUT_CAP_BYTES, "stderr": OUTPUT_CAP_BYTES, "result": RESULT_CAP_BYTES, "status": 4096}
    bufs = {name: bytearray() for name in caps}
    totals = dict.fromkeys(caps, 0)
    names = {fd: name for name, fd in fds.items()}
    ready_at = None
    backstop = False
    with selectors.DefaultSelector() as sel:
        for fd in names:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                backstop = True
                _kill_from_status(bufs["status"])
                break
            for key, _ in sel.select(remaining):
                chunk = os.read(key.fd, 65536)
                name = names[key.fd]
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                totals[name] += len(chunk)
                room = caps[name] - len(bufs[name])
                if room > 0:
                    bufs[name] += chunk[:room]
                if name == "result" and ready_at is None and b'"stage": "ready"' in bufs["result"]:
                    ready_at = time.monotonic()
    status: dict[str, Any] = {}
    for line in bufs["status"].split(b"\n"):  # written by the worker (a line may be cut if it hung)
        try:
            status.update(json.loads(line))
        except ValueError:
            continue
    return Outcome(parse_lines(bytes(bufs["result"])), bufs["stdout"], bufs["stderr"], totals, status,
                    ready_at, time.monotonic(), backstop)


def _kill_from_status(status: bytearray) -> None:
    """The worker did not end a child in time: kill it from here (same user, or root)."""
    for msg in parse_lines(bytes(status), key="pid"):
        try:
            os.killpg(int(msg["pid"]), signal.SIGKILL)
        except (OSError, ValueError, TypeError):
            pass


def parse_lines(buf: bytes, key: str = "stage") -> list[dict[str, Any]]:
    """The JSON objects, one per line, that have `key`; anything else is skipped (the child is untrusted)."""
    msgs = []
    for line in buf.split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(msg, dict) and key in msg and (key != "stage" or isinstance(msg["stage"], str)):
            msgs.append(msg)
    return msgs


def _text(buf: bytearray, total: int) -> str:
    text = buf.decode("utf-8", errors="replace")
    if total > len(buf):
        text += f"\n[… {total - len(buf):,} more bytes not shown]"
    return text


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def absorb_messages(messages: list[dict[str, Any]], run: RunResult, timeout_s: float, timed_out: str | None) -> None:
    """Fold the child's messages into `run`; set `run.incident` for timeouts and sandbox failures."""
    run.loaded = False
    stages = set()
    for msg in messages:
        stage = msg["stage"]
        stages.add(stage)
        if stage == "fatal":
            run.incident = ("The sandbox could not be set up, so your code was not run: "
                            f"{str(msg.get('error'))[:300]}")
            run.incident_kind = "server"
        elif stage == "ready":
            limits = msg.get("limits")
            if isinstance(limits, dict):
                run.limits = {str(k): int(v) for k, v in limits.items() if isinstance(v, int)}
        elif stage == "probe":
            run.probe = {str(k): str(v)[:40] for k, v in msg.items() if k != "stage"}
        elif stage == "load":
            run.load_reported = True
            run.loaded = bool(msg.get("ok"))
            run.load_error = (None if msg.get("ok") or not msg.get("error")
                              else student_error(str(msg["error"])[:800]))
            run.found = bool(msg.get("found", True))
            run.reading = decode_reading(msg.get("reading"))
            if isinstance(msg.get("callables"), list):
                run.callables = [str(c)[:60] for c in msg["callables"][:20]]
        elif stage == "case" and isinstance(msg.get("name"), str):
            run.cases[msg["name"]] = decode_case(msg)
        elif stage == "done":
            run.done = True
            run.used_builtin = bool(msg.get("used_builtin"))
    if timed_out == "startup" and run.incident is None:
        run.incident = "The sandbox did not start in time (the server is busy); your code was not run. Try again."
        run.incident_kind = "server"
    elif timed_out == "run":
        where = ("while loading (the top level of your code, outside the function)" if "load" not in stages
                 else "inside your function")
        run.incident = time_limit_message(timeout_s, where)
        run.incident_kind = "timeout"


@message_template
def time_limit_message(timeout_s: float, where: str) -> str:
    """A run stopped at its time limit, and where the code was when it was stopped."""
    return (f"Time limit: your code was still running after {number(timeout_s)} s {where}, so it was stopped. "
            "Is there an infinite loop?")


def _exit_incident(returncode: int, run: RunResult) -> str | None:
    """Explain why the child ended before reporting everything."""
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            return "Your code used up its CPU-time limit and was stopped. Is there an infinite loop?"
        if sig == signal.SIGXFSZ:
            return "Your code tried to write a file, which the sandbox does not allow, and was stopped."
        if sig == signal.SIGSEGV:
            return "Your code crashed the Python interpreter (segmentation fault)."
        if sig == signal.SIGSYS:
            return "Your code made a system call the sandbox forbids outright, and was stopped."
        if sig == signal.SIGKILL:
            return ("Your code was killed, most likely because it asked for more memory than the sandbox allows "
                    f"(about {MEMORY_BUDGET_BYTES >> 20} MB on top of PyTorch).")
        return f"Your code was stopped by {_signal_name(sig)}."
    if "MemoryError" in run.stderr:
        return ("Your code ran out of memory and the Python process ended: it asked for more memory than the "
                f"sandbox allows (about {MEMORY_BUDGET_BYTES >> 20} MB on top of PyTorch).")
    return (f"Your code ended the Python process (exit status {returncode}) before the checks finished. "
            "Remove any `sys.exit()`, `exit()`, `quit()` or `os._exit()` from it.")
