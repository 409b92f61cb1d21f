"""The warm worker: one process that has imported PyTorch, and forks a fresh child per submission.

Starting Python and importing PyTorch costs seconds of CPU; forking a process that has
already done so costs milliseconds. `exercise.sandbox.Sandbox` starts this module once per
server (``python -I -u -c ... CONTROL_FD``) with an empty environment, then sends it one
request per submission over the control socket. Each request carries five file descriptors (the
write ends of the server's stdout, stderr, result and status pipes, and the request file holding
the source and the test cases) and a short JSON header.

For each request the worker forks a child, which `enter_sandbox`:

1. starts a new session (its own process group) and keeps only its pipes: stdin is
   ``/dev/null``, stdout and stderr go to the server, the results to fd 3, nothing else is open;
2. reads the request file (the worker itself never reads a student's source, so no student's
   code is ever in the memory another student's child inherits);
3. when the worker runs as root, drops to a fresh unprivileged user id;
4. sets the resource limits (CPU seconds, address space, file size, open files, no new
   processes; soft = hard);
5. installs the seccomp allowlist (`exercise.syscall_filter`): from here on the kernel refuses
   every file, socket, process and signal to anything but itself, whatever code asks.

Only then does it compile the student's source (`exercise.runner.run_source`). The worker
kills a child's process group when its wall-clock time is up, reaps it and writes its exit
status to the status pipe. When the server goes away (its end of the control socket closes),
the worker kills every child still running and exits.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass
from typing import Any

from exercise import syscall_filter
from exercise.runner import run_source

#: The result pipe's number inside a child.
RESULT_FD = 3
#: A request's header: its length in bytes, then the JSON; it arrives with the five `REQUEST_FDS`.
HEADER = struct.Struct("!I")
REQUEST_FDS = ("stdout", "stderr", "result", "status", "request")
#: A child gets its time limit plus this much for the few milliseconds of its own set-up.
SETUP_GRACE_S = 1.0


# --------------------------------------------------------------------------- the child


class _ResultPipe:
    """Writes one JSON object per line to the result pipe (bound before the filter: no import later)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._dumps = json.dumps
        self._write = os.write

    def send(self, obj: dict[str, Any]) -> None:
        data = (self._dumps(obj, allow_nan=True) + "\n").encode()
        while data:
            data = data[self._write(self.fd, data):]


def _address_space_now() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmSize not found in /proc/self/status")


def _apply_limits(limits_wanted: dict[str, int]) -> dict[str, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    limits = {
        # CPU seconds count from the fork: what the set-up used, plus the student's share.
        "RLIMIT_CPU": int(usage.ru_utime + usage.ru_stime) + 1 + int(limits_wanted["cpu_seconds"]),
        "RLIMIT_AS": _address_space_now() + int(limits_wanted["memory_budget_bytes"]),
        "RLIMIT_FSIZE": int(limits_wanted["file_size_bytes"]),
        "RLIMIT_NOFILE": int(limits_wanted["open_files"]),
        "RLIMIT_CORE": 0,
        "RLIMIT_NPROC": 0,  # no new task at all (root is exempt: the fresh user id is not root)
    }
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    return limits


def _only_these_fds(fds: dict[str, int]) -> None:
    """Make fd 0 /dev/null, 1 and 2 the server's stdout and stderr, 3 the results; close the rest."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    wanted = {0: devnull, 1: fds["stdout"], 2: fds["stderr"], RESULT_FD: fds["result"]}
    # Move the sources out of the way first, so that no dup2 overwrites one still to be copied.
    moved = {target: os.dup(source) for target, source in wanted.items()}
    request = os.dup(fds["request"])
    for target, source in moved.items():
        os.dup2(source, target, inheritable=False)
    keep = {0, 1, 2, RESULT_FD, request}
    for fd in map(int, os.listdir("/proc/self/fd")):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    fds["request"] = request


def _die_with_the_worker() -> None:
    """Ask the kernel to SIGKILL this child if the worker that forked it dies first."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() == 1:  # the worker died before the request above took effect
        os._exit(70)


def enter_sandbox(fds: dict[str, int], header: dict[str, Any], filtered: bool) -> tuple[_ResultPipe, dict[str, Any]]:
    """Steps 1-5 of the module docstring, in a freshly forked child. Returns the pipe and the request.

    After step 3 it also asks for SIGKILL should the worker die first, so no child outlives it.
    """
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.setsid()
    _only_these_fds(fds)
    pipe = _ResultPipe(RESULT_FD)
    with os.fdopen(fds["request"], "rb") as f:
        request = json.loads(f.read())
    uid = header.get("uid")
    if uid is not None:
        os.setgroups([])
        os.setgid(int(uid))
        os.setuid(int(uid))
        if os.getuid() != uid or os.geteuid() != uid or os.getegid() != uid:
            raise RuntimeError("the switch to the sandbox user did not take effect")
    elif os.geteuid() == 0:
        raise RuntimeError("refusing to run a submission as root: no sandbox user was given")
    _die_with_the_worker()  # after the switch of user, which clears the request
    os.chdir("/")
    limits = _apply_limits(request["limits"])
    if filtered:
        syscall_filter.install()
    return pipe, {**request, "limits": limits}


def _probe() -> dict[str, str]:
    """What the kernel answers when the sandboxed child tries to open a file and a socket."""
    found = {}
    for what, attempt in (("open", lambda: os.close(os.open("/", os.O_RDONLY))),
                          ("socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())):
        try:
            attempt()
            found[what] = "allowed"
        except OSError as exc:
            found[what] = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return found


def child_main(fds: dict[str, int], header: dict[str, Any], filtered: bool) -> None:
    """Everything a forked child does; never returns."""
    pipe = _ResultPipe(fds["result"])
    try:
        pipe, request = enter_sandbox(fds, header, filtered)
    except BaseException as exc:  # noqa: BLE001 - nothing of the student's has run yet
        pipe.send({"stage": "fatal", "error": f"{type(exc).__name__}: {exc}"})
        os._exit(70)
    pipe.send({"stage": "ready", "uid": os.getuid(), "limits": request["limits"]})
    if header.get("kind") == "probe":
        pipe.send({"stage": "probe", **_probe()})
    else:
        run_source(request["source"], request["cases"], pipe.send)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - the student may have replaced or closed it
            pass
    os._exit(0)


# --------------------------------------------------------------------------- the worker


@dataclass
class _Child:
    status_fd: int
    deadline: float
    timed_out: bool = False


def warm_up() -> None:
    """Import and initialise what a submission may use, while files can still be read."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    x = torch.randn(2, 3, 4)
    F.scaled_dot_product_attention(x, x, x)
    scores = x @ x.transpose(-2, -1) / 2.0
    torch.softmax(scores.masked_fill(torch.tril(torch.ones(3, 3)) == 0, float("-inf")), dim=-1)
    torch.nn.Softmax(dim=-1)(torch.bmm(x, x.mT)).double().float()
    torch.einsum("bqd,bkd->bqk", x, x)
    torch.where(torch.ones(3, 3).bool(), scores, torch.tensor(float("-inf")))
    str(x), repr(np.arange(3.0))
    a = np.random.default_rng(0).standard_normal((2, 3, 4))
    np.exp(a @ a.swapaxes(-1, -2) / np.sqrt(4)).sum(axis=-1, keepdims=True)
    for name in ("math", "numpy.linalg", "torch.nn", "typing", "dataclasses", "functools", "itertools",
                 "collections", "traceback", "pyseccomp"):
        __import__(name)


def _receive(sock: socket.socket) -> tuple[dict[str, Any], dict[str, int]] | None:
    """One request: its header and its descriptors. None when the server has gone."""
    data, fds, _, _ = socket.recv_fds(sock, HEADER.size, len(REQUEST_FDS))
    if not data:
        return None
    while len(data) < HEADER.size:
        more = sock.recv(HEADER.size - len(data))
        if not more:
            return None
        data += more
    (length,) = HEADER.unpack(data)
    body = b""
    while len(body) < length:
        more = sock.recv(length - len(body))
        if not more:
            return None
        body += more
    if len(fds) != len(REQUEST_FDS):
        for fd in fds:
            os.close(fd)
        raise RuntimeError(f"a request came with {len(fds)} descriptors, expected {len(REQUEST_FDS)}")
    return json.loads(body), dict(zip(REQUEST_FDS, fds, strict=True))


def _write_status(fd: int, status: dict[str, Any]) -> None:
    try:
        os.write(fd, (json.dumps(status) + "\n").encode())
    except OSError:
        pass  # the server stopped listening


def serve(sock: socket.socket, filtered: bool) -> None:
    """Fork a child per request until the server closes the control socket."""
    children: dict[int, _Child] = {}
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector up
    with selectors.DefaultSelector() as sel:
        sel.register(sock, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        while True:
            timeout = min((c.deadline for c in children.values()), default=None)
            events = sel.select(None if timeout is None else max(0.0, timeout - time.monotonic()))
            server_gone = False
            for key, _ in events:
                if key.fileobj is sock:
                    received = _receive(sock)
                    if received is None:
                        server_gone = True
                        continue
                    header, fds = received
                    try:
                        pid = os.fork()
                    except OSError as exc:  # out of memory or processes: say so, and serve the next request
                        _write_status(fds["status"], {"error": f"the sandbox could not start a process ({exc})"})
                        for fd in fds.values():
                            os.close(fd)
                        continue
                    if pid == 0:
                        child_main(fds, header, filtered)
                    for name, fd in fds.items():
                        if name != "status":
                            os.close(fd)  # the child's copies are the only ones left: EOF comes when it ends
                    _write_status(fds["status"], {"pid": pid})
                    deadline = time.monotonic() + float(header["timeout_s"]) + SETUP_GRACE_S
                    children[pid] = _Child(fds["status"], deadline)
                else:
                    while True:
                        try:
                            if not os.read(wake_r, 512):
                                break
                        except BlockingIOError:
                            break
            now = time.monotonic()
            for pid, child in children.items():
                if not child.timed_out and now >= child.deadline:
                    child.timed_out = True
                    _kill_group(pid)
            _reap(children)
            if server_gone:
                for pid in children:
                    _kill_group(pid)
                while children:
                    _reap(children, block=True)
                return


def _kill_group(pid: int) -> None:
    """SIGKILL a child's whole process group (it is its session leader; it cannot have made others)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _reap(children: dict[int, _Child], block: bool = False) -> None:
    """Collect every child that has ended and tell the server how it ended."""
    while children:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        child = children.pop(pid, None)
        if child is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        _write_status(child.status_fd, {"exit": code, "timed_out": child.timed_out})
        os.close(child.status_fd)
        if block:
            return


def main() -> None:  # pragma: no cover - run as a separate process by exercise.sandbox
    sock = socket.socket(fileno=int(sys.argv[1]))
    filtered = "--unfiltered" not in sys.argv[2:]
    warm_up()
    sock.sendall(b"ready\n")
    serve(sock, filtered)
    os._exit(0)
