"""The server's half of the sandbox: a warm worker, a queue, and everything read back to the end.

A `Sandbox` owns one worker process (`exercise.zygote`), started on first use, which forks a
kernel-filtered child per submission. `check_submission` is the one call the page makes:

1. wait for a turn in a first-come, first-served queue (at most `Sandbox.parallel` children at
   once; `on_wait` hears the queue position while waiting);
2. write the source and the test cases to an unnamed temporary file, create the stdout, stderr,
   result and status pipes, and hand the file and the pipes' write ends to the worker;
3. read all four pipes until each one is closed (a child's last words arrive with, or after, its
   ``done``), with a wall-clock backstop in case the worker itself hangs;
4. turn the messages into a `RunResult`, and the run into the checklist (`exercise.verdicts.evaluate`).

Before running anybody's code the sandbox proves itself (`Sandbox.availability`): a probe child
must be refused a file open and a socket by the kernel, and the reference solution must pass.
If not, execution stays off and the reason is said in plain words (fail closed).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import core.exercise_solution as solution
from exercise.cases import Case, exercise_cases
from exercise.limits import (  # noqa: F401 - DISABLE_SETTING and switched_off are also the sandbox's API
    DEFAULT_TIMEOUT_S,
    DISABLE_SETTING,
    FILE_SIZE_BYTES,
    MAX_SOURCE_CHARS,
    MEMORY_BUDGET_BYTES,
    OPEN_FILES,
    switched_off,
)
from exercise.readback import read_to_the_end
from exercise.results import RunResult
from exercise.verdicts import ExerciseReport, evaluate
from exercise.zygote import HEADER, SETUP_GRACE_S

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: Starting the worker: a new Python importing PyTorch, on a possibly busy server.
STARTUP_TIMEOUT_S = 90.0
#: Beyond a child's own deadline (which the worker enforces), how long the server still waits.
BACKSTOP_S = 10.0
#: Children running at once; the rest wait in the queue. A check takes a fraction of a second.
DEFAULT_PARALLEL = 2
#: Fresh user ids for the children (root only): far above any real account.
SANDBOX_UID_RANGE = (1_700_000_000, 1_800_000_000)
#: The environment variables the worker may inherit: none of the server's, except OpenBLAS's
#: processor settings, which some hosts need for correct results.
INHERITED_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
#: Said to the student wherever code cannot be run on the server.
OFFLINE_HINT = ("You can run exactly the same checks on your own computer: save your function in a file and run "
                "`python -m exercise my_attention.py` in a copy of this app's repository.")

PROBE_MESSAGES = {
    "open": "a file could be opened",
    "socket": "a network socket could be created",
}


@dataclass(frozen=True)
class Availability:
    """Whether this server may run submitted code, and if not, why (in plain words)."""

    available: bool
    reason: str = ""


def sandbox_environment() -> dict[str, str]:
    """The worker's whole environment: nothing of the server's (no secrets, no paths)."""
    env = {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.update({k: os.environ[k] for k in INHERITED_VARIABLES if k in os.environ})
    return env


class _Queue:
    """First come, first served, with at most `slots` holders at once."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._cond = threading.Condition()
        self._waiting: deque[object] = deque()
        self._running = 0

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Hold one slot for the body; `on_wait(n)` is told the number of checks ahead while waiting."""
        ticket = object()
        told = None
        with self._cond:
            self._waiting.append(ticket)
        try:
            while True:
                with self._cond:
                    # Those queued before this ticket, plus one for the running checks when every slot is taken.
                    ahead = self._waiting.index(ticket) + max(0, self._running - self.slots + 1)
                    if self._waiting[0] is ticket and self._running < self.slots:
                        self._waiting.popleft()
                        self._running += 1
                        break
                    if told == ahead:
                        self._cond.wait(0.5)
                        continue
                if on_wait is not None:
                    on_wait(ahead)  # outside the lock: it may draw on a page, or raise to stop the wait
                told = ahead
        except BaseException:
            with self._cond:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._waiting)


class Sandbox:
    """One warm worker for the whole server, and the queue in front of it. Thread-safe.

    `filtered=False` starts a worker that skips the seccomp filter: it exists only so the tests
    can prove that the self-test then keeps execution off (see `availability`).
    """

    def __init__(self, parallel: int = DEFAULT_PARALLEL, filtered: bool = True) -> None:
        self.filtered = filtered
        self._queue = _Queue(parallel)
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._worker: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._availability: Availability | None = None
        self._self_test_thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the worker

    def _start_worker(self) -> None:
        """Start the worker and wait until it has imported PyTorch (call with `_lock` held)."""
        self._stop_worker()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        boot = (f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); "
                "from exercise.zygote import main; main()")
        args = [sys.executable, "-I", "-u", "-c", boot, str(theirs.fileno())]
        if not self.filtered:
            args.append("--unfiltered")
        try:
            self._worker = subprocess.Popen(
                args, cwd="/", env=sandbox_environment(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), start_new_session=True,
            )
        finally:
            theirs.close()
        ours.settimeout(STARTUP_TIMEOUT_S)
        try:
            greeting = ours.recv(6, socket.MSG_WAITALL)
        except OSError:
            greeting = b""
        ours.settimeout(None)
        if greeting != b"ready\n":
            ours.close()
            self._stop_worker()
            raise RuntimeError("the checker's worker process did not start")
        self._control = ours

    def _stop_worker(self) -> None:
        if self._control is not None:
            self._control.close()  # the worker kills its children and exits when this closes
            self._control = None
        if self._worker is not None:
            try:
                self._worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._worker.kill()
                self._worker.wait()
            self._worker = None

    @property
    def worker_pid(self) -> int | None:
        """The worker's process id while it runs (None before the first check)."""
        with self._lock:
            return self._worker.pid if self._worker is not None and self._worker.poll() is None else None

    def close(self) -> None:
        """Stop the worker (it is also stopped when the server's process ends)."""
        with self._lock:
            self._stop_worker()

    def _connection(self, failed: socket.socket | None = None) -> socket.socket:
        """The worker's control socket; a new worker if there is none, it has exited, or `failed` is still current.

        Comparing with `failed` means that of several threads whose send failed on the same dead worker, only
        the first starts a new one: the others use it instead of replacing it (and its running checks).
        """
        with self._lock:
            if (self._control is None or self._control is failed or self._worker is None
                    or self._worker.poll() is not None):
                self._start_worker()
            assert self._control is not None
            return self._control

    def _send(self, header: dict[str, Any], fds: list[int]) -> None:
        body = json.dumps(header).encode()
        message = [HEADER.pack(len(body)) + body]
        control = self._connection()
        try:
            with self._send_lock:
                socket.send_fds(control, message, fds)
        except OSError:  # the worker died since it was last used: a new one, and one more try
            control = self._connection(failed=control)
            with self._send_lock:
                socket.send_fds(control, message, fds)

    # ------------------------------------------------------------------ running

    def run(self, source: str, cases: tuple[Case, ...], timeout_s: float, *, kind: str = "submission",
            on_wait: Callable[[int], None] | None = None) -> RunResult:
        """Run `source` on `cases` in a fresh filtered child and return what came back, unjudged."""
        with self._queue.turn(on_wait):
            return self._run(source, cases, timeout_s, kind)

    def _run(self, source: str, cases: tuple[Case, ...], timeout_s: float, kind: str) -> RunResult:
        start = time.monotonic()
        uid = _fresh_uid() if os.geteuid() == 0 else None
        run = RunResult(sandbox_uid=uid)
        request = {"source": source, "cases": [c.as_json() for c in cases],
                   "limits": {"cpu_seconds": math.ceil(timeout_s) + 2, "memory_budget_bytes": MEMORY_BUDGET_BYTES,
                              "file_size_bytes": FILE_SIZE_BYTES, "open_files": OPEN_FILES}}
        pipes = {name: os.pipe() for name in ("stdout", "stderr", "result", "status")}
        try:
            with tempfile.TemporaryFile() as request_file:
                request_file.write(json.dumps(request).encode())
                request_file.flush()
                request_file.seek(0)
                header = {"kind": kind, "uid": uid, "timeout_s": timeout_s}
                write_ends = [pipes[name][1] for name in ("stdout", "stderr", "result", "status")]
                try:
                    self._send(header, [*write_ends, request_file.fileno()])
                finally:
                    for fd in write_ends:
                        os.close(fd)
            read_ends = {name: r for name, (r, _) in pipes.items()}
            outcome = read_to_the_end(read_ends, deadline=start + timeout_s + SETUP_GRACE_S + BACKSTOP_S)
        finally:
            for r, _ in pipes.values():
                try:
                    os.close(r)
                except OSError:
                    pass
        outcome.fill(run, timeout_s)
        run.elapsed_s = time.monotonic() - start
        if outcome.ready_at is not None:
            run.run_s = outcome.end - outcome.ready_at
        filtered = "a seccomp filter" if self.filtered else "NO system-call filter"
        who = f"the unprivileged user {uid}" if uid is not None else "the server's user"
        run.isolation = f"a fresh process as {who}, under {filtered}"
        return run

    # ------------------------------------------------------------------ proving it works

    def availability(self, wait: bool = True) -> Availability | None:
        """Whether code may run here: decided once, by a self-test, before the first check.

        The probe child must be refused opening a file and creating a socket with ``EPERM`` (the
        filter's answer, not a permission check), and the reference solution must pass. With
        `wait` false, the self-test runs in the background and None means "not known yet".
        """
        with self._lock:
            if self._availability is not None:
                return self._availability
            if self._self_test_thread is None:
                self._self_test_thread = threading.Thread(target=self._decide, name="sandbox-self-test", daemon=True)
                self._self_test_thread.start()
            thread = self._self_test_thread
        if not wait:
            return None
        thread.join()
        return self._availability

    def _decide(self) -> None:
        result = self._self_test()
        with self._lock:
            self._availability = result
        verdict = "ON: the sandbox's self-test passed" if result.available else f"OFF: {result.reason}"
        logging.getLogger("attention").info('"Check my code" is %s', verdict)  # the start-up line's sequel

    def _self_test(self) -> Availability:
        try:
            probe = self.run("", (), DEFAULT_TIMEOUT_S, kind="probe")
        except Exception as exc:  # noqa: BLE001 - any failure keeps execution off
            return Availability(False, f"the sandbox's worker process could not be started ({exc}).")
        if probe.incident:
            return Availability(False, "the sandbox could not be set up on this server: " + probe.incident)
        leaks = [PROBE_MESSAGES[what] for what in PROBE_MESSAGES if probe.probe.get(what) != "EPERM"]
        if leaks:
            return Availability(False, "this server does not enforce the sandbox's system-call filter: in a test "
                                       f"run, {' and '.join(leaks)}.")
        report = evaluate(self.run(inspect.getsource(solution), exercise_cases(), DEFAULT_TIMEOUT_S),
                          exercise_cases())
        if not report.passed:
            failed = next(c for c in report.checks if not c.passed)
            return Availability(False, f"the reference solution did not pass in the sandbox ({failed.message}).")
        return Availability(True)


def check_submission(source: str, sandbox: Sandbox, timeout_s: float = DEFAULT_TIMEOUT_S,
                     on_wait: Callable[[int], None] | None = None) -> ExerciseReport:
    """Run `source` in the sandbox and check its ``scaled_dot_product_attention`` against the lesson.

    `timeout_s` is the wall-clock time the student's code gets (loading it and all the calls).
    Never raises because of anything in `source`: an infinite loop, a memory or fork bomb,
    ``sys.exit``, a syntax error, ... all come back as failed checks with a message. When this
    server cannot enforce the sandbox, or the environment variable `DISABLE_SETTING` switches
    execution off, nothing runs and the report says why. Raises `ValueError` only for a bad
    `timeout_s`.
    """
    if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and 0 < timeout_s <= 120):
        raise ValueError(f"timeout_s must be a number of seconds in (0, 120], got {timeout_s!r}.")
    if not isinstance(source, str):
        return _report_without_run(f"Expected Python source code as text, got {type(source).__name__}.", "malformed")
    if not source.strip():
        return _report_without_run("There is no code to check: paste or write your function first.", "empty")
    if len(source) > MAX_SOURCE_CHARS:
        return _report_without_run(
            f"Your code is {len(source):,} characters long; the checker accepts at most {MAX_SOURCE_CHARS:,}.",
            "too_long")
    if switched_off(os.environ.get(DISABLE_SETTING)):
        return _report_without_run(f"Code execution is switched off on this server ({DISABLE_SETTING}). {OFFLINE_HINT}")
    availability = sandbox.availability()
    if availability is None or not availability.available:
        reason = availability.reason if availability else "the sandbox is not ready."
        return _report_without_run(f"Code execution is off on this server: {reason} {OFFLINE_HINT}")
    cases = exercise_cases()
    try:
        run = sandbox.run(source, cases, timeout_s, on_wait=on_wait)
    except Exception as exc:  # noqa: BLE001 - the server must stay up whatever happens
        return _report_without_run(f"The checker itself failed ({type(exc).__name__}: {exc}); "
                                   "your code was not judged.")
    return evaluate(run, cases)


def _report_without_run(message: str, kind: str = "server") -> ExerciseReport:
    """A report for code that was not run: `kind` says whose the reason is (`RunResult.incident_kind`)."""
    return evaluate(RunResult(incident=message, incident_kind=kind), exercise_cases())


def _fresh_uid() -> int:
    """An unused user id in `SANDBOX_UID_RANGE` (no process runs as it)."""
    busy = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                busy.add(os.stat(f"/proc/{pid}").st_uid)
            except OSError:
                continue
    while True:
        uid = SANDBOX_UID_RANGE[0] + secrets.randbelow(SANDBOX_UID_RANGE[1] - SANDBOX_UID_RANGE[0])
        if uid not in busy:
            return uid
