"""Hostile submissions: correct attention functions that also try to get out of the sandbox.

Each source is a template: ``{app}`` is the app's directory, ``{secrets}`` its
``.streamlit/secrets.toml``, ``{port}`` a TCP listener the test opened on 127.0.0.1 and
``{marker}`` a word the test looks for among the machine's processes and files. Every attempt
is made at the top level, inside ``try``, and prints what it got, so that anything it read
would land in the report; the function after it is the reference solution, so the checks
themselves pass whatever the attack did. Whether an attack got out is decided from outside
(`tests/exercise/test_sandbox_security.py`), never from what the submission says.
"""

from __future__ import annotations

import inspect

import core.exercise_solution as solution

SOLUTION = inspect.getsource(solution)


PRELUDE = """
import ctypes, os, sys
def _attempt(code):
    try:
        got = eval(code)
        print("GOT", code, repr(got)[:300])
    except BaseException as e:  # the refusal is the expected outcome
        print("REFUSED", code, type(e).__name__, str(e)[:100])
"""


def _attempts(*lines: str) -> tuple[str, ...]:
    """Expressions to try in turn (templates: see the module docstring)."""
    return lines


ATTACKS: dict[str, tuple[str, ...]] = {
    # ----------------------------------------------------------- reading files, through native code
    "read_open": _attempts("open({secrets!r}).read()", "__import__('pathlib').Path({secrets!r}).read_text()",
                           "__import__('io').FileIO({secrets!r}).read()"),
    "read_os": _attempts("os.read(os.open({secrets!r}, os.O_RDONLY), 4096)"),
    "read_numpy": _attempts("__import__('numpy').fromfile({secrets!r}, dtype='uint8').tobytes()",
                            "__import__('numpy').memmap({secrets!r}, dtype='uint8', mode='r').tobytes()",
                            "__import__('numpy').loadtxt({secrets!r}, dtype=str, delimiter='~')"),
    "read_torch": _attempts("bytes(__import__('torch').from_file({secrets!r}, size=64, dtype=__import__('torch')"
                            ".uint8).tolist())",
                            "__import__('torch').load({secrets!r}, weights_only=False)"),
    "read_ctypes": _attempts(
        "(lambda libc, buf: (libc.read(libc.open({secrets!r}.encode(), 0), buf, 4096), buf.raw))"
        "(ctypes.CDLL(None), ctypes.create_string_buffer(4096))",
        "(lambda libc, buf: (libc.read(libc.syscall(257, -100, {secrets!r}.encode(), 0), buf, 4096), buf.raw))"
        "(ctypes.CDLL(None), ctypes.create_string_buffer(4096))",
    ),
    "read_listing": _attempts("os.listdir({app!r})", "os.stat({secrets!r}).st_size",
                              "os.path.exists({secrets!r})"),
    "read_inherited_fds": _attempts("[os.read(fd, 4096) for fd in range(3, 64) if fd != 3]",
                                    "os.read(0, 4096)"),
    # ----------------------------------------------------------- other processes
    "read_proc": _attempts(
        "open('/proc/self/environ', 'rb').read()",
        "[open(f'/proc/{{p}}/environ', 'rb').read() for p in (os.getppid(), 1)]",
        "open(f'/proc/{{int(open(f\"/proc/{{os.getppid()}}/stat\").read().split()[3])}}/environ', 'rb').read()",
        "open(f'/proc/{{os.getppid()}}/mem', 'rb').read(16)",
        "os.listdir('/proc')",
    ),
    "signal_worker": _attempts("os.kill(os.getppid(), 9)", "os.kill(1, 0)", "os.killpg(os.getpgid(os.getppid()), 9)"),
    "ptrace": _attempts("ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)",
                        "ctypes.CDLL(None).syscall(310, os.getppid(), 0, 1, 0, 1, 0)",
                        "ctypes.get_errno()"),
    # ----------------------------------------------------------- writing and creating files
    "write_app": _attempts("open({app!r} + '/streamlit_app.py', 'r+b').write(b'DEFACED')",
                           "os.truncate({app!r} + '/streamlit_app.py', 0)",
                           "os.remove({app!r} + '/streamlit_app.py')",
                           "os.rename({app!r} + '/streamlit_app.py', {app!r} + '/x.py')"),
    "write_native": _attempts("__import__('torch').save(__import__('torch').zeros(1), {app!r} + '/streamlit_app.py')",
                              "__import__('numpy').save({app!r} + '/{marker}.npy', __import__('numpy').zeros(1))",
                              "__import__('numpy').zeros(3).tofile({app!r} + '/{marker}.bin')",
                              "ctypes.CDLL(None).creat(b'/tmp/{marker}', 438)",
                              "ctypes.CDLL(None).mkdir(b'/tmp/{marker}-dir', 511)"),
    "create_files": _attempts("open('/tmp/{marker}.txt', 'w').write('x')", "os.mkdir({app!r} + '/{marker}')",
                              "open('{marker}.txt', 'w').write('x')", "os.memfd_create('{marker}')"),
    # ----------------------------------------------------------- the network
    "connect_socket": _attempts("__import__('socket').create_connection(('127.0.0.1', {port}), 2)",
                                "__import__('_socket').socket().connect(('127.0.0.1', {port}))"),
    "connect_ctypes": _attempts(
        "(lambda libc: libc.connect(libc.socket(2, 1, 0), (ctypes.c_ubyte * 16)(2, 0, {port} >> 8, {port} & 255, "
        "127, 0, 0, 1), 16))(ctypes.CDLL(None))",
    ),
    "connect_libraries": _attempts("__import__('urllib.request').request.urlopen('http://127.0.0.1:{port}/')",
                                   "__import__('torch').distributed.TCPStore('127.0.0.1', {port}, 2, False, "
                                   "timeout=__import__('datetime').timedelta(seconds=2))",
                                   "__import__('http.client').client.HTTPConnection('127.0.0.1', {port}).request("
                                   "'GET', '/')"),
    # ----------------------------------------------------------- new processes (and leaving them behind)
    "spawn": _attempts("os.fork()", "os.posix_spawn('/bin/sleep', ['sleep', '{marker}'], {{}})",
                       "os.system('sleep {marker} &')",
                       "__import__('subprocess').Popen(['/bin/sleep', '{marker}'], start_new_session=True)",
                       "ctypes.CDLL(None).fork()",
                       "ctypes.CDLL(None).syscall(56, 17, 0, 0, 0, 0)",
                       "os.execv('/bin/sleep', ['sleep', '{marker}'])"),
    "threads": _attempts("__import__('threading').Thread(target=__import__('time').sleep, args=(60,)).start()"),
    "io_uring_and_namespaces": _attempts("ctypes.CDLL(None).syscall(425, 8, 0)",
                                         "ctypes.CDLL(None).unshare(0x20000)",
                                         "ctypes.CDLL(None).syscall(165, 0, 0, 0, 0, 0)"),
    "lift_the_limits": _attempts(
        "__import__('resource').setrlimit(__import__('resource').RLIMIT_NPROC, (100, 100))",
        "ctypes.CDLL(None).prctl(22, 0, 0, 0, 0)",
        "__import__('resource').getrlimit(__import__('resource').RLIMIT_NPROC)",
    ),
}

#: A canary that must not leave the sandbox: it is in the secrets file and in the server's environment.
CANARY_FILE = "canary-file-7f3a9c"
CANARY_ENV = "canary-env-51be02"


def render(name: str, app: str, secrets: str, port: int, marker: str) -> str:
    """The attack `name` aimed at this run's app copy, listener and marker: a whole submission."""
    lines = [line.format(app=app, secrets=secrets, port=port, marker=marker) for line in ATTACKS[name]]
    return PRELUDE + "".join(f"_attempt({line!r})\n" for line in lines) + SOLUTION
