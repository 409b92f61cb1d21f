"""The kernel's half of the sandbox: a seccomp filter that lets a process compute and nothing else.

A submission runs in a child process that has already imported and warmed up everything the
check needs. Just before the student's source is compiled, `install` loads a seccomp-BPF
filter (through libseccomp, via the ``pyseccomp`` bindings) with ``no_new_privs`` set. From then
on the kernel itself answers every system call of that process, whoever makes it: Python,
NumPy, PyTorch, ``ctypes`` or any other native code.

The filter is an allowlist. What a tensor computation needs is allowed: reading and writing
the file descriptors the process already holds (its pipes), memory management, futexes,
clocks, signals to itself, and exiting. Everything else fails with ``EPERM``, in particular:
opening, creating, listing or inspecting files (``open``, ``openat``, ``stat``, …), sockets,
``execve``, ``fork``/``clone`` (no new processes or threads), ``ptrace`` and
``process_vm_readv``, signals to other processes, ``memfd_create``, ``io_uring``, namespaces and
mounts. A system call made with another architecture's numbering (x32, i386 on x86-64) kills
the process, libseccomp's default for a foreign ABI. The filter cannot be removed or widened
once loaded, and it is inherited by anything the process could start.
"""

from __future__ import annotations

import errno
import os

#: Allowed outright. Names that do not exist on this architecture are skipped.
ALLOWED_SYSCALLS: tuple[str, ...] = (
    # the file descriptors the process already holds: its three pipes and /dev/null
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "fstat",
    # memory: the allocator and PyTorch's tensors
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise",
    # locks, clocks, sleeping, the scheduler
    "futex", "sched_yield", "clock_gettime", "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep",
    "getrandom", "getrusage", "times", "sched_getaffinity",
    # identity (harmless to know)
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid",
    # the process's own signal handling, and ending it
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "restart_syscall",
    "exit", "exit_group",
)
#: Allowed only when the first argument is this process's own id: raising a signal in itself
#: (``os.abort`` and a few libraries do) but never signalling another process.
SELF_ONLY_SYSCALLS: tuple[str, ...] = ("kill", "tgkill", "tkill")


class FilterUnavailableError(RuntimeError):
    """The filter could not be built or loaded on this host (no libseccomp, old kernel, forbidden)."""


def install() -> None:
    """Load the allowlist filter into the calling process (and everything it could start).

    Sets ``no_new_privs`` first (libseccomp's default), so no set-uid program could ever give
    rights back. Raises `FilterUnavailableError` with the reason when that is not possible here.
    """
    try:
        import pyseccomp as seccomp  # loads libseccomp.so.2 through ctypes
    except (ImportError, OSError, AttributeError, TypeError) as exc:
        raise FilterUnavailableError(f"libseccomp could not be loaded ({type(exc).__name__}: {exc})") from exc
    try:
        rules = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
        for name in ALLOWED_SYSCALLS:
            if _exists(seccomp, name):
                rules.add_rule(seccomp.ALLOW, name)
        me = os.getpid()
        for name in SELF_ONLY_SYSCALLS:
            if _exists(seccomp, name):
                rules.add_rule(seccomp.ALLOW, name, seccomp.Arg(0, seccomp.EQ, me))
        rules.load()
    except OSError as exc:
        raise FilterUnavailableError(f"the kernel refused the seccomp filter ({exc})") from exc


def _exists(seccomp, name: str) -> bool:
    """Whether `name` is a system call of this machine's architecture."""
    try:
        return seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) >= 0
    except (OSError, ValueError):
        return False
