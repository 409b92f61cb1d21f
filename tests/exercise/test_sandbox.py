"""The sandbox as the page uses it: limits, clear messages, a queue for a whole class, nothing lost.

One warm `Sandbox` serves the whole module, as one serves a whole server. The attacks on its
containment (files, network, processes, as root and unprivileged) are in
`tests/exercise/test_sandbox_security.py`.
"""

from __future__ import annotations

import inspect
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import core.exercise_solution as solution
from exercise.cases import exercise_cases
from exercise.limits import MEMORY_BUDGET_BYTES
from exercise.mistake_kinds import CheckOutcome
from exercise.readback import parse_lines, read_to_the_end
from exercise.sandbox import SANDBOX_UID_RANGE, Sandbox, _Queue, check_submission, sandbox_environment
from exercise.verdicts import CHECK_ALLCLOSE, CHECK_NAMES, CHECK_RUNS, ExerciseReport
from tests.helpers.installed import cuda_build_installed

SOLUTION_SOURCE = inspect.getsource(solution)
SERVER_SECRET = "hunter2-do-not-leak"  # in this process's environment while the module's worker starts


def message(report: ExerciseReport, name: str) -> str:
    return next(c.message for c in report.checks if c.name == name)


@pytest.fixture(scope="module")
def sandbox():
    os.environ["SERVER_SECRET_TOKEN"] = SERVER_SECRET
    box = Sandbox()
    try:
        assert box.availability().available
    finally:
        del os.environ["SERVER_SECRET_TOKEN"]
    yield box
    box.close()


FORK_BYPASS = """
import _posixsubprocess, os
r, w = os.pipe()
while True:  # the low-level call under subprocess: only the kernel can stop it
    _posixsubprocess.fork_exec([b"/bin/sleep", b"1000"], [b"/bin/sleep"], True, (w,), None, None,
        -1, -1, -1, -1, -1, -1, r, w, False, True, -1, None, None, None, -1, None, False)
"""
HOSTILE = {  # name: (source, timeout in s, words of the first check's message)
    "infinite_loop_top": ("while True:\n    pass\n", 2.0, "still running after 2 s while loading"),
    "infinite_loop_in_function": (SOLUTION_SOURCE.replace("d_k = Q.size(-1)", "while True:\n        pass"), 2.0,
                                  "still running after 2 s inside your function"),
    "memory_bomb": ("hoard = []\nwhile True:\n    hoard.append(bytearray(100 * 2**20))\n", 10.0,
                    "more memory than the sandbox allows"),
    "fork_bomb": ("import os\nwhile True:\n    os.fork()\n", 3.0, "Operation not permitted"),
    "fork_bomb_bypassing_python": (FORK_BYPASS, 3.0, "the kernel refuses it every file"),
    "thread": ("import threading\nthreading.Thread(target=print).start()\n", 3.0, "can't start new thread"),
    "sys_exit": ("import sys\nsys.exit(0)\n", 3.0, "remove `sys.exit()`"),
    "os_exit": ("import os\nos._exit(3)\n", 3.0, "exit status 3"),
    "syntax_error": ("def scaled_dot_product_attention(Q, K, V:\n    return Q\n", 3.0, "SyntaxError on line 1"),
    "new_module": ("import sqlite3\n", 3.0, "can import only what it loaded"),
    "read_secrets": ("open('/etc/passwd').read()\n", 3.0, "the kernel refuses it every file"),
    "snoop_environment": ("import os\nraise RuntimeError(sorted(os.environ))\n", 3.0, "RuntimeError"),
}


@pytest.fixture(scope="module")
def sandboxed(sandbox):
    """Every submission of this module, run once and concurrently through the one sandbox."""
    submissions = {name: (src, t) for name, (src, t, _) in HOSTILE.items()}
    submissions["solution"] = (SOLUTION_SOURCE, 5.0)
    submissions["builtin"] = (SOLUTION_SOURCE.replace("output = weights @ V",
                                                      "output = F.scaled_dot_product_attention(Q, K, V)")
                              .replace("import torch\n", "import torch\nimport torch.nn.functional as F\n", 1), 5.0)
    submissions["no_scaling"] = (SOLUTION_SOURCE.replace(" / d_k**0.5", ""), 5.0)
    submissions["print_megabytes"] = ("for _ in range(100):\n    print('x' * 100_000)\n" + SOLUTION_SOURCE, 10.0)
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = {name: pool.submit(check_submission, src, sandbox, t) for name, (src, t) in submissions.items()}
        return {name: f.result() for name, f in futures.items()}


def test_the_reference_solution_passes_every_check_in_the_sandbox(sandboxed):
    report = sandboxed["solution"]
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert report.incident is None and report.diagnoses == []
    assert "seccomp filter" in report.isolation


def test_a_mistake_is_diagnosed_through_the_sandbox_too(sandboxed):
    report = sandboxed["no_scaling"]
    assert not next(c.passed for c in report.checks if c.name == CHECK_ALLCLOSE)
    assert any("No scaling" in d for d in report.diagnoses)


def test_calling_pytorchs_own_attention_does_not_count(sandboxed):
    assert "write it from the formula" in message(sandboxed["builtin"], CHECK_RUNS)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_submission_is_a_failed_check_with_a_clear_message(sandboxed, name):
    report = sandboxed[name]
    assert not report.passed and len(report.checks) == len(CHECK_NAMES)
    assert HOSTILE[name][2] in message(report, CHECK_RUNS), message(report, CHECK_RUNS)


def test_the_child_sees_none_of_the_servers_environment(sandboxed):
    text = message(sandboxed["snoop_environment"], CHECK_RUNS)
    assert "SERVER_SECRET_TOKEN" not in text and "PATH" not in text and SERVER_SECRET not in text
    assert "OMP_NUM_THREADS" in text


def test_sandbox_environment_holds_nothing_of_the_server(monkeypatch):
    monkeypatch.setenv("SOME_API_TOKEN", SERVER_SECRET)
    env = sandbox_environment()
    assert SERVER_SECRET not in env.values() and "PATH" not in env and "HOME" not in env
    assert env["OMP_NUM_THREADS"] == "1"


def test_the_limits_were_applied(sandboxed):
    report = sandboxed["solution"]
    limits = report.limits
    assert limits["RLIMIT_NPROC"] == 0 and limits["RLIMIT_FSIZE"] == 1 << 20 and limits["RLIMIT_CORE"] == 0
    assert MEMORY_BUDGET_BYTES < limits["RLIMIT_AS"] < MEMORY_BUDGET_BYTES + (16 << 30)  # what PyTorch mapped, + budget
    if os.geteuid() == 0:
        assert SANDBOX_UID_RANGE[0] <= report.sandbox_uid < SANDBOX_UID_RANGE[1]
        assert "unprivileged user" in report.isolation


def test_time_limits_hold(sandboxed):
    for name in ("infinite_loop_top", "infinite_loop_in_function"):
        assert sandboxed[name].run_s is not None and sandboxed[name].run_s < HOSTILE[name][1] + 5


def test_printing_megabytes_is_truncated_and_the_code_still_checked(sandboxed):
    report = sandboxed["print_megabytes"]
    assert report.passed
    assert len(report.stdout) < 5000 and "more bytes not shown" in report.stdout
    assert "It printed 10 MB" in message(report, CHECK_RUNS)


def test_the_server_keeps_no_child_but_its_worker(sandboxed, sandbox):
    worker = sandbox.worker_pid
    assert worker in _children_of(os.getpid())
    assert _children_of(worker) == []  # every child forked for a check has been reaped


def _running(pid: int) -> bool:
    """True while process `pid` exists and is neither a zombie nor dead (its /proc state)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                if int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


# --------------------------------------------------------------------------- a whole class at once


def test_sixty_students_at_once_all_get_their_report(sandbox):
    positions: dict[int, list[int]] = {}

    def student(i: int) -> ExerciseReport:
        source = SOLUTION_SOURCE + f"\nprint('student {i}')\n"
        return check_submission(source, sandbox, on_wait=lambda ahead: positions.setdefault(i, []).append(ahead))

    with ThreadPoolExecutor(max_workers=60) as pool:
        reports = list(pool.map(student, range(60)))
    assert all(r.passed for r in reports)
    assert [r.stdout.strip() for r in reports] == [f"student {i}" for i in range(60)]  # nobody got another's
    assert positions  # some had to wait, and were told
    assert all(seen == sorted(seen, reverse=True) for seen in positions.values())  # the queue only moves forward


def test_the_queue_serves_in_order_and_forgets_a_waiter_who_leaves():
    queue = _Queue(slots=1)
    order: list[str] = []
    release = threading.Event()

    def holder() -> None:
        with queue.turn():
            release.wait(5)
            order.append("first")

    def waiter(name: str, leave: bool = False) -> None:
        def on_wait(ahead: int) -> None:
            if leave:
                raise KeyboardInterrupt  # what a page's rerun does to a waiting script
        try:
            with queue.turn(on_wait):
                order.append(name)
        except KeyboardInterrupt:
            order.append(f"{name} left")

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    time.sleep(0.1)
    for name, leave in (("second", False), ("quitter", True), ("third", False)):
        threads.append(threading.Thread(target=waiter, args=(name, leave)))
        threads[-1].start()
        time.sleep(0.1)
    release.set()
    for t in threads:
        t.join(5)
    assert order == ["quitter left", "first", "second", "third"]
    assert len(queue) == 0


# --------------------------------------------------------------------------- nothing lost


def test_output_sent_after_done_is_read_to_the_end():
    pipes = {name: os.pipe() for name in ("stdout", "stderr", "result", "status")}
    os.write(pipes["result"][1], b'{"stage": "ready", "limits": {}}\n{"stage": "done", "used_builtin": false}\n')
    os.write(pipes["stdout"][1], b"last words")  # arrives after "done"
    os.write(pipes["status"][1], b'{"pid": 1}\n{"exit": 0, "timed_out": false}\n')
    for _, w in pipes.values():
        os.close(w)
    outcome = read_to_the_end({name: r for name, (r, _) in pipes.items()}, deadline=time.monotonic() + 5)
    for r, _ in pipes.values():
        os.close(r)
    assert bytes(outcome.stdout) == b"last words"
    assert [m["stage"] for m in outcome.messages] == ["ready", "done"] and outcome.status["exit"] == 0


def test_a_last_print_is_never_dropped(sandbox):
    source = SOLUTION_SOURCE.replace("    return output, weights",
                                     "    print('end of call ' + 'x' * 500)\n    return output, weights")
    with ThreadPoolExecutor(max_workers=8) as pool:
        reports = list(pool.map(lambda _: check_submission(source, sandbox), range(24)))
    calls = [c for c in exercise_cases() if not c.optional]  # a right output: no optional call
    assert all(r.stdout.count("end of call") == len(calls) for r in reports)  # one per call


def test_result_lines_that_are_not_json_objects_are_ignored():
    buf = b'{"stage": "ready"}\nnot json\n[1, 2]\n{"no_stage": 1}\n{"stage": "done"}\n'
    assert [m["stage"] for m in parse_lines(buf)] == ["ready", "done"]


# --------------------------------------------------------------------------- the worker


def test_a_killed_worker_is_replaced_on_the_next_check(sandbox):
    old = sandbox.worker_pid
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _running(old) and time.monotonic() < deadline:  # dead: gone, or a zombie until the sandbox reaps it
        time.sleep(0.05)
    assert not _running(old)
    assert check_submission(SOLUTION_SOURCE, sandbox).passed
    assert sandbox.worker_pid not in (None, old)


@pytest.mark.parametrize(("source", "expected"), [
    ("", "no code"),
    ("   \n", "no code"),
    ("x = 1\n" * 10_000, "at most"),
    (b"import torch", "as text"),
])
def test_unusable_input_is_a_failed_check_not_an_exception(source, expected):
    box = Sandbox()
    report = check_submission(source, box)
    assert not report.passed and expected in message(report, CHECK_RUNS)
    assert box.worker_pid is None  # nothing was started


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), 1000])
def test_a_bad_timeout_is_a_value_error(timeout):
    with pytest.raises(ValueError, match="timeout_s"):
        check_submission(SOLUTION_SOURCE, Sandbox(), timeout_s=timeout)


def test_a_worker_that_cannot_start_keeps_execution_off(monkeypatch):
    monkeypatch.setattr("exercise.sandbox.PROJECT_ROOT", "/nonexistent")
    box = Sandbox()
    availability = box.availability()
    box.close()
    assert not availability.available and "could not be started" in availability.reason


@pytest.mark.parametrize("works", [True, False])
def test_the_self_tests_verdict_is_logged(monkeypatch, caplog, works):
    """The sequel of the start-up's line (`ui.deployment`), in the server's log: on, or off and why."""
    import logging

    if not works:
        monkeypatch.setattr("exercise.sandbox.PROJECT_ROOT", "/nonexistent")
    caplog.set_level(logging.INFO, logger="attention")  # as Streamlit sets it in the server
    log = logging.getLogger("attention")
    log.addHandler(caplog.handler)
    box = Sandbox()
    try:
        availability = box.availability()
    finally:
        box.close()
        log.removeHandler(caplog.handler)
    said = [r.getMessage() for r in caplog.records if r.name == "attention"]
    expected = ("\"Check my code\" is ON: the sandbox's self-test passed" if works
                else f"\"Check my code\" is OFF: {availability.reason}")
    assert availability.available == works and set(said) == {expected}  # (once per handler that heard it)


def test_the_switch_turns_execution_off_for_every_caller(monkeypatch):
    monkeypatch.setenv("ATTENTION_DISABLE_EXEC", "yes")
    box = Sandbox()
    report = check_submission(SOLUTION_SOURCE, box)
    assert not report.passed and "switched off on this server" in message(report, CHECK_RUNS)
    assert box.worker_pid is None  # nothing was started


def _pipes() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
        except OSError:
            pass
    return count


def test_checks_leave_no_descriptor_open_in_the_server(sandbox):
    check_submission(SOLUTION_SOURCE, sandbox)  # the worker is up
    before = _pipes()
    for source in (SOLUTION_SOURCE, "while True:\n    pass\n", "import os\nos._exit(1)\n"):
        check_submission(source, sandbox, timeout_s=1.0)
    assert _pipes() == before


def _sleeping_check(box: Sandbox) -> tuple[threading.Thread, list[ExerciseReport], list[int]]:
    """A check whose submission sleeps at its top level, started in a thread; its child's pid, once it runs."""
    assert box.availability().available  # the self-test's own children have come and gone
    result: list[ExerciseReport] = []
    thread = threading.Thread(target=lambda: result.append(
        check_submission("import time\ntime.sleep(60)\n", box, timeout_s=60.0)))
    thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (box.worker_pid and _children_of(box.worker_pid)):
        time.sleep(0.05)
    children = _children_of(box.worker_pid) if box.worker_pid else []
    assert children, "the check never started"
    time.sleep(0.3)  # past the child's set-up, into the student's code
    return thread, result, children


def test_a_running_child_is_filtered_without_new_privileges_as_seen_from_outside():
    box = Sandbox()
    thread, _, children = _sleeping_check(box)
    try:
        status, worker = (dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines()
                               if ":\t" in line) for pid in (children[0], box.worker_pid))
    finally:
        box.close()  # the worker kills its children as it leaves
        thread.join(30)
    assert status["Seccomp"].strip() == "2"  # mode 2: a BPF filter
    assert int(status["Seccomp_filters"]) == int(worker["Seccomp_filters"]) + 1  # one more than the host's own
    assert status["NoNewPrivs"].strip() == "1"
    assert int(status["Threads"]) == 1
    if os.geteuid() == 0:
        assert SANDBOX_UID_RANGE[0] <= int(status["Uid"].split()[0]) < SANDBOX_UID_RANGE[1]


def test_no_child_outlives_its_worker():
    box = Sandbox()
    thread, result, children = _sleeping_check(box)
    os.kill(box.worker_pid, signal.SIGKILL)
    thread.join(30)
    box.close()
    assert not thread.is_alive() and not result[0].passed
    # The kernel ends the children when their parent dies (a signal, delivered as soon as they are scheduled): on
    # a loaded machine that can take a moment, so they have a few seconds to go; one still running then failed.
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)


def _alive(pid: int) -> bool:
    """`pid` exists and is not a zombie (a zombie has ended; only its exit status is left)."""
    try:
        return _state(pid) != "Z"
    except FileNotFoundError:
        return False


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def test_the_worst_children_at_once_fit_community_clouds_limit_with_margin(sandbox):
    """Each child may add its budget of address space, and copy at most the worker's anonymous memory (its
    copy-on-write pages); `DEFAULT_PARALLEL` of them at once, beside the server and the worker as measured under a
    class, must leave `CLOUD_MARGIN_BYTES` of Cloud's limit free."""
    from benchmarks.memory import rollup
    from exercise.limits import CLOUD_LIMIT_BYTES, CLOUD_MARGIN_BYTES, SERVER_AND_WORKER_BYTES
    from exercise.sandbox import DEFAULT_PARALLEL

    if cuda_build_installed():
        pytest.skip("Cloud's memory is budgeted for PyTorch's CPU build (requirements.txt); this environment has "
                    "PyPI's CUDA build, whose warm worker holds more (the start-up line flags that build)")
    check_submission(SOLUTION_SOURCE, sandbox)  # the worker is warm, as it is after a check
    worst_child = MEMORY_BUDGET_BYTES + rollup(sandbox.worker_pid)["Anonymous"]
    assert SERVER_AND_WORKER_BYTES + DEFAULT_PARALLEL * worst_child + CLOUD_MARGIN_BYTES <= CLOUD_LIMIT_BYTES


GREEDY_CHILD = """import gc, resource
inherited = gc.get_objects()  # writes every inherited object's reference count: its pages are copied
hoard = []
try:
    while True:
        hoard.append(b"x" * 2**20)
except MemoryError:
    pass
grown = len(hoard) * 2**20
hoard.clear()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, grown)
"""


def test_a_greedy_child_grows_by_its_budget_and_no_more(sandbox):
    """The premise of the sum above, seen from inside a child that copies what it inherited and takes all it can."""
    check_submission(SOLUTION_SOURCE, sandbox)
    worker_rss = int(Path(f"/proc/{sandbox.worker_pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    peak_rss, grown = map(int, check_submission(GREEDY_CHILD, sandbox, timeout_s=20).stdout.split())
    assert MEMORY_BUDGET_BYTES / 2 < grown <= MEMORY_BUDGET_BYTES
    assert peak_rss <= worker_rss + MEMORY_BUDGET_BYTES


@pytest.mark.parametrize(("name", "outcome"), [
    ("solution", CheckOutcome("passed")),
    ("no_scaling", CheckOutcome("failed", 4, "scale_none")),
    ("infinite_loop_top", CheckOutcome("did_not_finish")),
    ("infinite_loop_in_function", CheckOutcome("did_not_finish")),
    ("syntax_error", CheckOutcome("failed", 1, "load_error")),
    ("memory_bomb", CheckOutcome("failed", 1, "load_error")),  # at the top level: raised while loading
    ("os_exit", CheckOutcome("failed", 1, "crashed")),
    ("builtin", CheckOutcome("failed", 1, "builtin")),
])
def test_what_a_check_came_to_is_counted_from_the_servers_own_run(sandboxed, name, outcome):
    assert sandboxed[name].outcome == outcome


@pytest.mark.parametrize(("source", "kind"), [("", "empty"), ("   \n", "empty"), ("x = 1\n" * 10_000, "too_long"),
                                              (b"import torch", "malformed")])
def test_unusable_input_is_counted_as_what_it_is(source, kind):
    assert check_submission(source, Sandbox()).outcome == CheckOutcome(kind)


def test_a_check_the_server_could_not_run_is_not_counted(monkeypatch):
    monkeypatch.setenv("ATTENTION_DISABLE_EXEC", "1")
    assert check_submission(SOLUTION_SOURCE, Sandbox()).outcome is None
