"""The part of the exercise checker that runs INSIDE the sandbox, next to the student's code.

`core.exercise.check_submission` starts this file as a script, ``python -I -u runner.py RESULT_FD``,
in a fresh temporary directory. ``-I`` (isolated mode) ignores every ``PYTHON*`` variable,
the user's site-packages and the script's directory, so nothing of the project can be
imported here: this module uses the standard library, NumPy and PyTorch only, and gets
everything else (the student's source, the test inputs, the limits) from ``input.json``
in its working directory.

In order, `main`:

1. reads ``input.json`` and imports PyTorch (still with the server's rights: the Python
   installation may not be readable by anybody else);
2. drops to the unprivileged user chosen by the parent (when started as root), sets
   ``PR_SET_NO_NEW_PRIVS`` and a parent-death signal;
3. sets the resource limits (CPU seconds, address space, file size, open files, processes;
   soft = hard, so they cannot be raised again);
4. reports ``ready`` on the result pipe (the student's time limit starts there);
5. installs an audit hook (`install_guard`) that refuses processes, sockets, ``ctypes`` and
   files outside the working directory;
6. compiles and executes the student's code, calls ``scaled_dot_product_attention`` on
   every test case and writes one JSON line per step to the result pipe.

The result pipe is a dedicated file descriptor, not stdout, so nothing the student prints is
mistaken for a result. The parent treats those lines as untrusted data and makes every
verdict itself: the student can only ever misreport their own results.

`run_case` and `encode_value` are also imported by `core.exercise` to run *trusted* functions
(the reference solution, the known mistakes) in-process through exactly the same code path.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import linecache
import os
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

SOURCE_NAME = "<your code>"
FUNCTION_NAME = "scaled_dot_product_attention"
#: Tensors with more elements than this come back as a shape only (the tests use at most 160).
MAX_ELEMENTS = 4096
#: Longest error message sent back, in characters.
MAX_MESSAGE = 600
#: At most this many files (and directories) may be created in the working directory.
MAX_CREATED_FILES = 32


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


def run_case(fn: Callable[..., Any], case: dict[str, Any]) -> dict[str, Any]:
    """Call ``fn(Q, K, V)`` (or ``fn(Q, K, V, mask)``) on one test case, in float32, never raising.

    `case` holds ``name``, ``Q``, ``K``, ``V`` and ``mask`` (nested lists or arrays; ``mask``
    may be None). A masked case uses the lesson's float mask of 1s and 0s; if that raises, it
    is retried once with the same mask as booleans, and the first error is kept as a note.
    """
    import torch

    def tensors() -> tuple[Any, Any, Any]:
        return tuple(torch.tensor(case[k], dtype=torch.float32) for k in ("Q", "K", "V"))  # type: ignore[return-value]

    out: dict[str, Any] = {"stage": "case", "name": case["name"], "ok": False}
    try:
        if case.get("mask") is None:
            result = fn(*tensors())
        else:
            try:
                result = fn(*tensors(), torch.tensor(case["mask"], dtype=torch.float32))
            except Exception as first:  # noqa: BLE001
                out["mask_note"] = describe_error(first)
                result = fn(*tensors(), torch.tensor(case["mask"], dtype=torch.float32).bool())
        out.update(split_result(result))
        out["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, MemoryError included
        out["error"] = describe_error(exc)
    return out


# --------------------------------------------------------------------------- the sandbox guard


_ALWAYS_BLOCKED = {
    "os.system": "run a shell command",
    "os.exec": "replace the Python process",
    "os.posix_spawn": "start a process",
    "os.spawn": "start a process",
    "os.fork": "start a process",
    "os.forkpty": "start a process",
    "subprocess.Popen": "start a process",
    "os.kill": "send a signal",
    "os.killpg": "send a signal",
    "signal.pthread_kill": "send a signal",
    "socket.__new__": "open a network socket",
    "socket.connect": "open a network connection",
    "socket.bind": "open a network socket",
    "socket.getaddrinfo": "look up a network address",
    "socket.gethostbyname": "look up a network address",
    "socket.gethostbyaddr": "look up a network address",
    "urllib.Request": "open a URL",
    "webbrowser.open": "open a web browser",
    "resource.setrlimit": "change the sandbox's resource limits",
    "resource.prlimit": "change the sandbox's resource limits",
    "os.chroot": "change the root directory",
    "os.setns": "change namespaces",
    "os.unshare": "change namespaces",
}
# Events whose path arguments must all lie inside the working directory.
_WRITE_EVENTS = {
    "os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink", "os.truncate", "os.chmod", "os.chown",
    "os.mkdir", "os.utime", "os.chdir", "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr",
    "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move",
    "shutil.make_archive", "shutil.unpack_archive",
}
# Events that only read: paths may lie in the working directory or the Python installation.
_READ_EVENTS = {"os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.getxattr", "os.listxattr"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _is_within(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def install_guard(workdir: str, read_roots: tuple[str, ...]) -> None:
    """Install an audit hook (PEP 578) that refuses what the exercise never needs.

    Refused: starting processes, signals, sockets, ``ctypes``, changing resource limits,
    opening or listing files outside `workdir` (reading is also allowed inside `read_roots`,
    the Python installation, so imports keep working), writing, deleting or renaming outside
    `workdir`, and creating more than `MAX_CREATED_FILES` files. A refusal raises
    ``PermissionError`` with a message naming what was refused.

    An audit hook cannot be removed once installed, but it is not a security boundary on its
    own (C code can act without raising events): it makes hostile code fail *clearly*, while
    the separate user, the resource limits and the process-group kill contain it.
    """
    workdir = os.path.realpath(workdir)
    roots = (workdir,)
    readable = tuple(os.path.realpath(r) for r in read_roots if r) + (workdir, "/dev/null")
    created = [0]

    def refuse(what: str) -> None:
        raise PermissionError(f"the exercise checker does not let your code {what}")

    def as_path(p: Any) -> str | None:
        if isinstance(p, int):
            return None  # an already-open file descriptor
        try:
            p = os.fsdecode(os.fspath(p))
        except TypeError:
            return None
        return os.path.realpath(p)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _ALWAYS_BLOCKED:
            refuse(_ALWAYS_BLOCKED[event] + f" ({event})")
        if event.startswith("ctypes."):
            refuse(f"use ctypes ({event})")
        if event == "open":
            path = as_path(args[0])
            if path is None:
                return
            mode, flags = (args + (None, None))[1:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                mode is None and isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
            if writing:
                if not _is_within(path, roots):
                    refuse(f"write to {path}: only files in its own working directory may be written")
                if not os.path.exists(path):
                    created[0] += 1
                    if created[0] > MAX_CREATED_FILES:
                        refuse(f"create more than {MAX_CREATED_FILES} files")
            elif not _is_within(path, readable):
                refuse(f"read {path}: only files in its own working directory may be opened")
        elif event in _WRITE_EVENTS:
            for a in args:
                path = as_path(a) if isinstance(a, (str, bytes, os.PathLike)) else None
                if path is not None and not _is_within(path, roots):
                    refuse(f"touch {path} ({event}): only its own working directory is allowed")
            if event == "os.mkdir":
                created[0] += 1
                if created[0] > MAX_CREATED_FILES:
                    refuse(f"create more than {MAX_CREATED_FILES} files")
        elif event in _READ_EVENTS:
            path = as_path(args[0]) if args and isinstance(args[0], (str, bytes, os.PathLike)) else workdir
            if path is not None and not _is_within(path, readable):
                refuse(f"list {path}: only its own working directory may be listed")

    sys.addaudithook(hook)


# --------------------------------------------------------------------------- the sandbox itself


class _ResultPipe:
    """Writes one JSON object per line to the result file descriptor."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._dumps = json.dumps
        self._write = os.write

    def send(self, obj: dict[str, Any]) -> None:
        data = (self._dumps(obj, allow_nan=True) + "\n").encode()
        while data:
            data = data[self._write(self.fd, data):]


def _tasks_of_uid(uid: int) -> int:
    """Number of tasks (processes and threads) the kernel charges to `uid`, for RLIMIT_NPROC."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                n += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return n


def _address_space_now() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmSize not found in /proc/self/status")


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getegid() != gid:
        raise RuntimeError("the switch to the sandbox user did not take effect")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no set-uid binary can give rights back
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def _set_parent_death_signal() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def _apply_limits(cfg: dict[str, Any]) -> dict[str, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    limits = {
        # CPU seconds are counted from the process start: add what starting PyTorch already used.
        "RLIMIT_CPU": int(usage.ru_utime + usage.ru_stime) + 1 + int(cfg["cpu_seconds"]),
        "RLIMIT_AS": _address_space_now() + int(cfg["memory_budget_bytes"]),
        "RLIMIT_FSIZE": int(cfg["file_size_bytes"]),
        "RLIMIT_NOFILE": int(cfg["open_files"]),
        "RLIMIT_CORE": 0,
        # No new task at all: the count already charged to this user is the ceiling.
        "RLIMIT_NPROC": max(1, _tasks_of_uid(os.getuid())),
    }
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    return limits


def main() -> None:  # pragma: no cover - exercised through core.exercise.check_submission in a subprocess
    pipe = _ResultPipe(int(sys.argv[1]))
    try:
        with open("input.json", encoding="utf-8") as f:
            cfg = json.load(f)
        os.remove("input.json")
        import numpy  # noqa: F401 - imported while the installation is readable
        import torch
        import torch.nn.functional as F

        torch.set_num_threads(1)
        warm = torch.randn(1, 2, 4)
        F.scaled_dot_product_attention(warm, warm, warm)  # lazy initialisation, with the server's rights
        torch.softmax(warm @ warm.transpose(-2, -1), dim=-1).masked_fill(torch.ones(2, 2) == 0, float("-inf"))
        for name in ("math", "numpy.linalg", "torch.nn", "typing", "dataclasses", "functools", "itertools"):
            __import__(name)
        if cfg.get("uid") is not None and os.geteuid() == 0:
            _drop_privileges(int(cfg["uid"]), int(cfg["gid"]))
        elif os.geteuid() == 0:
            raise RuntimeError("refusing to run the submission as root: no sandbox user was given")
        _set_parent_death_signal()
        limits = _apply_limits(cfg)
    except BaseException as exc:  # noqa: BLE001
        pipe.send({"stage": "fatal", "error": describe_error(exc)})
        os._exit(70)

    pipe.send({"stage": "ready", "uid": os.getuid(), "limits": limits})
    workdir = os.getcwd()
    read_roots = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, *[p for p in sys.path if p]})
    install_guard(workdir, read_roots)

    # Spot a call to PyTorch's own implementation from inside the student's function.
    calls = [0]
    builtin_sdpa = F.scaled_dot_product_attention

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return builtin_sdpa(*args, **kwargs)

    F.scaled_dot_product_attention = spy
    source = cfg["source"]
    linecache.cache[SOURCE_NAME] = (len(source), None, source.splitlines(True), SOURCE_NAME)
    namespace: dict[str, Any] = {"__name__": "submission", "__builtins__": builtins}
    try:
        code = compile(source, SOURCE_NAME, "exec", dont_inherit=True)
        exec(code, namespace)  # noqa: S102 - this is the sandbox
        fn = namespace.get(FUNCTION_NAME)
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, SystemExit, MemoryError, ...
        pipe.send({"stage": "load", "ok": False, "error": describe_error(exc),
                   "syntax": isinstance(exc, SyntaxError)})
        os._exit(0)
    if fn is None or not callable(fn):
        names = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
        pipe.send({"stage": "load", "ok": False, "found": fn is not None, "callables": names[:20],
                   "error": None})
        os._exit(0)
    pipe.send({"stage": "load", "ok": True})
    for case in cfg["cases"]:
        pipe.send(run_case(fn, case))
    pipe.send({"stage": "done", "used_builtin": calls[0] > 0})
    os._exit(0)


if __name__ == "__main__":
    main()
