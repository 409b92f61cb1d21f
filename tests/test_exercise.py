"""The exercise checker: verdicts and diagnoses (in-process, trusted code) and the sandbox (hostile code).

The sandbox tests start real subprocesses, each importing PyTorch (a few seconds of CPU), so every
submission is run once, all of them concurrently, by the module-scoped `sandboxed` fixture.
"""

from __future__ import annotations

import inspect
import os
import stat
import subprocess
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import core.exercise_solution as solution
from core.attention import scaled_dot_product_attention as numpy_attention
from core.exercise import (
    CHECK_ALLCLOSE,
    CHECK_CAUSAL,
    CHECK_NAMES,
    CHECK_ROWS,
    CHECK_RUNS,
    CHECK_SHAPE,
    CHECK_WORKED,
    SANDBOX_UID_RANGE,
    SHARED_TMP_DIRS,
    SKELETON,
    STARTUP_TIMEOUT_S,
    WORKDIR_PREFIX,
    ExerciseReport,
    Mistake,
    _kill_uid,
    _parse_lines,
    _remove_tree,
    all_mistakes,
    check_submission,
    decode_case,
    evaluate,
    exercise_cases,
    match_mistake,
    mistake_demo,
    mistake_function,
    mistaken_attention,
    processes_of_uid,
    run_trusted,
    sandbox_environment,
)
from core.worked_example import worked_example
from tests import lesson_values as lesson

SOLUTION_SOURCE = inspect.getsource(solution)
CASES = exercise_cases()
SERVER_SECRET = "hunter2-do-not-leak"  # put in this process's environment before any sandbox starts


def student(body: str) -> str:
    """A complete submission around `body`, the inside of the student's function."""
    return ("import math\nimport torch\nimport torch.nn.functional as F\n\n\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n" + textwrap.indent(textwrap.dedent(body), "    "))


def lesson_style(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))",
                 fill="scores.masked_fill(mask == 0, float('-inf'))",
                 softmax="F.softmax(scores, dim=-1)", ret="weights @ V, weights") -> str:
    """The lesson's solution with one line swapped for a mistake."""
    return student(f"""
        scores = {scores}
        if mask is not None:
            scores = {fill}
        weights = {softmax}
        return {ret}
    """)


def trusted_report(source: str) -> ExerciseReport:
    """Check source written in THIS test file by running it in-process (never do this with user code)."""
    namespace: dict = {}
    exec(compile(source, "<test submission>", "exec"), namespace)  # noqa: S102 - our own test code
    return evaluate(run_trusted(namespace["scaled_dot_product_attention"], CASES), CASES)


def verdicts(report: ExerciseReport) -> dict[str, bool]:
    return {c.name: c.passed for c in report.checks}


def message(report: ExerciseReport, name: str) -> str:
    return next(c.message for c in report.checks if c.name == name)


# =========================================================================== inputs and known mistakes


def test_cases_are_the_lessons_inputs_in_float32():
    by_name = {c.name: c for c in CASES}
    assert by_name["random"].Q.shape == (2, 5, 16) and by_name["random"].Q.dtype == np.float32
    assert by_name["probe"].Q.shape == (4, 4, 4)
    ex = worked_example(0)
    np.testing.assert_allclose(by_name["worked"].Q, lesson.Q, atol=1e-6)
    np.testing.assert_allclose(by_name["worked"].V, lesson.V, atol=1e-6)
    np.testing.assert_array_equal(by_name["worked_causal"].mask, np.tril(np.ones((3, 3))))
    assert by_name["worked"].Q.dtype == np.float32 and ex.X.shape == (3, 4)


def test_the_correct_formula_matches_core_and_pytorch():
    for case in CASES:
        out, weights = mistaken_attention(case.Q, case.K, case.V, mask=case.mask)
        mask = None if case.mask is None else case.mask.astype(bool)
        ref_out, ref_w = numpy_attention(case.Q, case.K, case.V, mask=mask)
        np.testing.assert_allclose(out, ref_out, atol=1e-12)
        np.testing.assert_allclose(weights, ref_w, atol=1e-12)
        t = [torch.from_numpy(a) for a in (case.Q, case.K, case.V)]
        attn_mask = None if mask is None else torch.from_numpy(mask)
        torch_out = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=attn_mask).numpy()
        np.testing.assert_allclose(out, torch_out, atol=1e-5)


@pytest.mark.parametrize("mistake", [m for m in all_mistakes() if len(m.wrong_parts()) == 1], ids=repr)
def test_every_single_mistake_is_recognised_as_itself(mistake):
    for case in CASES[:2]:  # the lesson's shape if the mistake runs on it, else the square probe
        try:
            out, _ = mistaken_attention(case.Q, case.K, case.V, mistake)
        except ValueError:
            continue
        assert match_mistake(case, out) == mistake
        break
    else:
        pytest.fail(f"{mistake} runs on no test case")


def test_mistake_list_has_no_duplicates_and_puts_simple_ones_first():
    mistakes = all_mistakes()
    assert len(set(mistakes)) == len(mistakes) and Mistake() not in mistakes
    counts = [len(m.wrong_parts()) for m in mistakes]
    assert counts == sorted(counts) and counts[0] == 1
    assert all(m.describe() for m in mistakes)


def test_mistaken_shapes_raise_like_pytorch():
    case = CASES[0]  # (2, 5, 16): Q @ K cannot be multiplied
    with pytest.raises(ValueError):
        mistaken_attention(case.Q, case.K, case.V, Mistake(scores="QK"))


# =========================================================================== verdicts (trusted, in-process)


def test_the_reference_solution_passes_every_check_in_process():
    report = trusted_report(SOLUTION_SOURCE)
    assert report.passed and [c.name for c in report.checks] == list(CHECK_NAMES)
    assert report.diagnoses == []
    np.testing.assert_allclose(np.round(report.worked_output, 3), lesson.OUTPUT)
    assert np.all(report.causal_weights[np.triu_indices(3, 1)] == 0)


MISTAKES = {  # id: (the student's source, the first check that fails, words of the diagnosis)
    "no scaling": (lesson_style(scores="Q @ K.transpose(-2, -1)"), CHECK_ALLCLOSE, "No scaling"),
    "d_k, not sqrt": (lesson_style(scores="Q @ K.transpose(-2, -1) / Q.size(-1)"), CHECK_ALLCLOSE,
                      "instead of √d_k"),
    "times sqrt": (lesson_style(scores="Q @ K.transpose(-2, -1) * Q.size(-1) ** 0.5"), CHECK_ALLCLOSE,
                   "Multiplied"),
    "sqrt(T)": (lesson_style(scores="Q @ K.transpose(-2, -1) / math.sqrt(Q.size(1))"), CHECK_ALLCLOSE,
                "wrong dimension"),
    "softmax dim=-2": (lesson_style(softmax="F.softmax(scores, dim=-2)"), CHECK_ROWS,
                       "Softmax over the wrong dimension"),
    "softmax dim=1": (lesson_style(softmax="F.softmax(scores, dim=1)"), CHECK_ROWS,
                      "Softmax over the wrong dimension"),
    "softmax dim=0": (lesson_style(softmax="F.softmax(scores, dim=0)"), CHECK_ROWS, "batch dimension"),
    "no softmax": (lesson_style(softmax="scores"), CHECK_ROWS, "No softmax"),
    "K not transposed": (lesson_style(scores="Q @ K / math.sqrt(Q.size(-1))"), CHECK_RUNS, "K not transposed"),
    "K.transpose(0, 1)": (lesson_style(scores="Q @ K.transpose(0, 1) / math.sqrt(Q.size(-1))"), CHECK_RUNS,
                          "over the batch dimension"),
    "K.T": (lesson_style(scores="Q @ K.T / math.sqrt(Q.size(-1))"), CHECK_RUNS, "reverses all three dimensions"),
    "K @ Q^T": (lesson_style(scores="K @ Q.transpose(-2, -1) / math.sqrt(Q.size(-1))"), CHECK_ALLCLOSE, "swapped"),
    "returns scores": (lesson_style(ret="scores, weights"), CHECK_SHAPE, "Returned the scores"),
    "returns weights": (lesson_style(ret="weights, weights"), CHECK_SHAPE, "Returned the attention weights"),
    "(weights, output)": (lesson_style(ret="weights, weights @ V"), CHECK_SHAPE, "Output and weights swapped"),
    "K.transpose(1, 2)": (lesson_style(scores="Q @ K.transpose(1, 2) / math.sqrt(Q.size(-1))"), CHECK_WORKED,
                          "assumes a batch dimension"),
    "float16": (lesson_style(ret="(weights.half() @ V.half()).float(), weights"), CHECK_ALLCLOSE,
                "lower precision"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch warns about K.T on 3-D tensors and dim-less softmax
@pytest.mark.parametrize(("source", "failed", "diagnosis"), list(MISTAKES.values()), ids=list(MISTAKES))
def test_each_common_mistake_gets_its_diagnosis(source, failed, diagnosis):
    report = trusted_report(source)
    assert not report.passed
    first_failed = next(c.name for c in report.checks if not c.passed)
    assert first_failed == failed
    assert any(diagnosis in d for d in report.diagnoses), report.diagnoses


def test_two_mistakes_at_once_are_both_named():
    report = trusted_report(lesson_style(scores="Q @ K.transpose(-2, -1)", softmax="F.softmax(scores, dim=-2)"))
    assert any("No scaling" in d for d in report.diagnoses)
    assert any("wrong dimension" in d for d in report.diagnoses)


@pytest.mark.parametrize(
    ("fill", "expected"),
    [
        ("scores.masked_fill(mask == 1, float('-inf'))", "polarity reversed"),
        ("scores.masked_fill(mask.bool(), -1e9)", "polarity reversed"),
        ("scores.masked_fill(mask == 0, 0.0)", "e⁰ = 1"),
        ("scores", "no effect"),
        ("scores.masked_fill(mask == 0, -100.0)", "not exactly 0"),
    ],
)
def test_mask_mistakes_are_diagnosed_in_the_causal_check(fill, expected):
    report = trusted_report(lesson_style(fill=fill))
    v = verdicts(report)
    assert all(v[name] for name in CHECK_NAMES[:-1]) and not v[CHECK_CAUSAL]
    assert expected in message(report, CHECK_CAUSAL)


def test_weights_zeroed_after_the_softmax_are_diagnosed():
    source = student("""
        weights = F.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)), dim=-1)
        if mask is not None:
            weights = weights * mask
        return weights @ V, weights
    """)
    assert "after the softmax" in message(trusted_report(source), CHECK_CAUSAL)


def test_a_boolean_only_mask_passes_with_a_note():
    report = trusted_report(lesson_style(fill="scores.masked_fill(~mask, float('-inf'))"))
    assert report.passed
    assert "boolean mask" in message(report, CHECK_CAUSAL)


def test_returning_only_the_output_passes_the_early_checks_and_says_so():
    report = trusted_report(lesson_style(ret="weights @ V"))
    v = verdicts(report)
    assert v[CHECK_RUNS] and v[CHECK_SHAPE] and v[CHECK_ALLCLOSE] and v[CHECK_WORKED]
    assert not v[CHECK_ROWS] and not v[CHECK_CAUSAL]
    assert "only the output" in message(report, CHECK_RUNS)
    assert "returns only the output" in message(report, CHECK_ROWS)


def test_a_function_without_a_mask_parameter_is_told_to_add_one():
    report = trusted_report(student("return F.softmax(Q @ K.transpose(-2, -1) / Q.size(-1) ** 0.5, -1) @ V, None")
                            .replace(", mask=None", ""))
    assert "mask=None" in message(report, CHECK_CAUSAL)


def test_the_skeleton_fails_clearly():
    report = trusted_report(SKELETON)
    assert not report.passed
    assert "NotImplementedError" in message(report, CHECK_RUNS)
    assert "write your attention here" in message(report, CHECK_RUNS)


def test_what_the_submission_says_cannot_become_markdown_on_the_page():
    report = trusted_report(student('raise ValueError("[click me](http://x.example) $x^2$ :red[alarm] **bold**")'))
    text = message(report, CHECK_RUNS)
    assert r"\[click me\](http://x.example) \$x^2\$ :red\[alarm\] \*\*bold\*\*" in text


def test_missing_return_is_pointed_out():
    report = trusted_report(student("scores = Q @ K.transpose(-2, -1)"))
    assert "forget `return`" in message(report, CHECK_RUNS)


def test_mistake_demos_compute_the_quiz_answers():
    d_k = mistake_demo(Mistake(scale="d_k"))
    assert not d_k.allclose and d_k.max_abs_diff > 0.1
    assert d_k.largest_weight < d_k.largest_weight_correct  # dividing by 16 flattens the rows
    assert d_k.row_sum_range == pytest.approx((1.0, 1.0))
    dim = mistake_demo(Mistake(softmax="queries"))
    assert dim.first_failed_check == CHECK_ROWS
    assert mistake_demo(Mistake(returns="scores")).first_failed_check == CHECK_SHAPE


def test_mistake_function_runs_through_the_runner_like_a_submission():
    run = run_trusted(mistake_function(Mistake()))
    assert evaluate(run, CASES).passed


# =========================================================================== untrusted data from the runner


@pytest.mark.parametrize(
    "msg",
    [
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": [[1, 2], [3]], "shape": [2, 2]}},
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": [1, 2, 3], "shape": [2, 5, 16]}},
        {"stage": "case", "ok": True, "kind": "pair", "output": {"data": "lots", "shape": "big"}, "weights": 7},
        {"stage": "case", "ok": True, "kind": "surprise", "output": None},
        {"stage": "case", "ok": False, "error": {"not": "a string"}},
        {"stage": "case", "ok": True, "kind": "single", "output": {"data": [[1e400]], "shape": [1, 1]}},
    ],
)
def test_malformed_runner_messages_never_raise(msg):
    res = decode_case(msg)
    run = run_trusted(solution.scaled_dot_product_attention)
    run.cases["random"] = res
    report = evaluate(run, CASES)
    assert len(report.checks) == len(CHECK_NAMES)


def test_result_lines_that_are_not_json_objects_are_ignored():
    buf = b'{"stage": "ready"}\nnot json\n[1, 2]\n{"no_stage": 1}\n{"stage": "done"}\n'
    assert [m["stage"] for m in _parse_lines(buf)] == ["ready", "done"]


@pytest.mark.parametrize(("source", "expected"), [
    ("", "no code"),
    ("   \n", "no code"),
    ("x = 1\n" * 10_000, "at most"),
    (b"import torch", "as text"),
])
def test_unusable_input_is_a_failed_check_not_an_exception(source, expected):
    report = check_submission(source)
    assert not report.passed and expected in message(report, CHECK_RUNS)
    assert report.workdir is None  # nothing was started


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), 1000])
def test_a_bad_timeout_is_a_value_error(timeout):
    with pytest.raises(ValueError, match="timeout_s"):
        check_submission(SOLUTION_SOURCE, timeout_s=timeout)


def test_cleanup_touches_nothing_outside_the_working_directory(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    workdir = outside / f"{WORKDIR_PREFIX}x"
    (workdir / "locked").mkdir(parents=True)
    (workdir / "locked" / "f.txt").write_text("x")
    os.chmod(workdir / "locked", 0)
    _remove_tree(str(workdir))
    _remove_tree(str(workdir))  # already gone: nothing happens, in particular to its parent
    assert not workdir.exists()
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755


def test_the_sandbox_environment_holds_nothing_of_the_server(monkeypatch):
    monkeypatch.setenv("SOME_API_TOKEN", SERVER_SECRET)
    env = sandbox_environment("/tmp/x")
    assert SERVER_SECRET not in env.values() and "PATH" not in env and "PYTHONPATH" not in env
    assert env["HOME"] == "/tmp/x" and env["OMP_NUM_THREADS"] == "1"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_the_sweep_kills_a_process_that_left_the_process_group():
    uid = SANDBOX_UID_RANGE[1] - 1
    proc = subprocess.Popen(["/bin/sleep", "60"], user=uid, group=uid, start_new_session=True)
    try:
        assert processes_of_uid(uid) == [proc.pid]
        _kill_uid(uid)
        assert proc.wait(timeout=10) < 0 and processes_of_uid(uid) == []
    finally:
        proc.kill()


# =========================================================================== the sandbox, for real

FORK_BYPASS = """
import _posixsubprocess, os
r, w = os.pipe()
while True:  # fork_exec raises no audit event: only the process limit stops this
    _posixsubprocess.fork_exec([b"/bin/sleep", b"1000"], [b"/bin/sleep"], True, (w,), None, None,
        -1, -1, -1, -1, -1, -1, r, w, False, True, -1, None, None, None, -1, None, False)
"""
SNOOP = """
import json, os, sys
print('{"stage": "done", "used_builtin": false}')  # fake results on stdout are ignored
found = {"env": sorted(os.environ), "secret": any("hunter2" in v for v in os.environ.values())}
for what, attempt in [("passwd", lambda: open("/etc/passwd").read()),
                      ("tests", lambda: os.listdir("/work/main/tests")),
                      ("proc_env", lambda: open("/proc/1/environ", "rb").read()),
                      ("write_tmp", lambda: open("/tmp/planted-by-student", "w").write("x")),
                      ("socket", lambda: __import__("socket").socket()),
                      ("big_file", lambda: open("big.bin", "wb").write(b"x" * (2 << 20)))]:
    try:
        attempt()
        found[what] = "ALLOWED"
    except Exception as e:
        found[what] = type(e).__name__
open("notes.txt", "w").write("my own folder is fine")
found["own_file"] = open("notes.txt").read()
raise RuntimeError("FOUND" + json.dumps(found))
"""
HOSTILE = {
    "infinite_loop_top": ("while True:\n    pass\n", 2.0),
    "infinite_loop_in_function": (SOLUTION_SOURCE.replace("d_k = Q.size(-1)", "while True:\n        pass"), 2.0),
    "memory_bomb": ("hoard = []\nwhile True:\n    hoard.append(bytearray(100 * 2**20))\n", 10.0),
    "fork_bomb": ("import os\nwhile True:\n    os.fork()\n", 3.0),
    "fork_bomb_bypassing_the_hook": (FORK_BYPASS, 3.0),
    "sys_exit": ("import sys\nsys.exit(0)\n", 3.0),
    "os_exit": ("import os\nos._exit(3)\n", 3.0),
    "syntax_error": ("def scaled_dot_product_attention(Q, K, V:\n    return Q\n", 3.0),
    "print_megabytes": ("for _ in range(100):\n    print('x' * 100_000)\n" + SOLUTION_SOURCE, 10.0),
    "delete_files": ("import shutil\nshutil.rmtree('{victim}')\n", 3.0),
    "snoop": (SNOOP, 3.0),
}
EXPECTED = {
    "infinite_loop_top": "still running after 2 s while loading",
    "infinite_loop_in_function": "still running after 2 s inside your function",
    "memory_bomb": "more memory than the sandbox allows",
    "fork_bomb": "does not let your code start a process",
    "fork_bomb_bypassing_the_hook": "no new processes",
    "sys_exit": "remove `sys.exit()`",
    "os_exit": "exit status 3",
    "syntax_error": "SyntaxError on line 1",
    "delete_files": "does not let your code touch",
    "snoop": "FOUND",
}


def children_of(pid: int) -> list[int]:
    """Processes (zombies included) whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                if entry.isdigit() and int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


@pytest.fixture(scope="module")
def victim(tmp_path_factory):
    d = tmp_path_factory.mktemp("victim")
    (d / "precious.txt").write_text("keep me")
    return d


def open_pipes() -> int:
    """Pipes this process holds (the sandbox talks over pipes; other libraries may open other files lazily)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
        except OSError:
            pass
    return count


@pytest.fixture(scope="module")
def sandboxed(victim):
    """Every sandboxed submission of this module, run once and concurrently, plus the server's state around them."""
    os.environ["SERVER_SECRET_TOKEN"] = SERVER_SECRET
    submissions = {name: (src.replace("{victim}", str(victim)), t) for name, (src, t) in HOSTILE.items()}
    submissions["solution"] = (SOLUTION_SOURCE, 5.0)
    submissions["builtin"] = (lesson_style(ret="F.scaled_dot_product_attention(Q, K, V), weights"), 5.0)
    submissions["no_scaling"] = (lesson_style(scores="Q @ K.transpose(-2, -1)"), 5.0)
    fds_before = open_pipes()
    children_before = set(children_of(os.getpid()))  # e.g. the browser tests' app server and driver
    tmp_mode = os.stat(tempfile.gettempdir()).st_mode
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {name: pool.submit(check_submission, src, t) for name, (src, t) in submissions.items()}
            reports = {name: f.result() for name, f in futures.items()}
    finally:
        del os.environ["SERVER_SECRET_TOKEN"]
    server = {"fds": (fds_before, open_pipes()),
              "children": [c for c in children_of(os.getpid()) if c not in children_before],
              "tmp_mode": (tmp_mode, os.stat(tempfile.gettempdir()).st_mode)}
    return reports, server, submissions


def test_the_reference_solution_passes_every_check_in_the_sandbox(sandboxed):
    report = sandboxed[0]["solution"]
    assert report.passed, [(c.name, c.message) for c in report.checks if not c.passed]
    assert report.incident is None and report.diagnoses == []


def test_a_mistake_is_diagnosed_through_the_sandbox_too(sandboxed):
    report = sandboxed[0]["no_scaling"]
    assert not verdicts(report)[CHECK_ALLCLOSE]
    assert any("No scaling" in d for d in report.diagnoses)


def test_calling_pytorchs_own_attention_does_not_count(sandboxed):
    report = sandboxed[0]["builtin"]
    assert not verdicts(report)[CHECK_RUNS]
    assert "write it from the formula" in message(report, CHECK_RUNS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_submission_is_a_failed_check_with_a_clear_message(sandboxed, name):
    report = sandboxed[0][name]
    assert not report.passed and len(report.checks) == len(CHECK_NAMES)
    assert EXPECTED[name] in message(report, CHECK_RUNS), message(report, CHECK_RUNS)


@pytest.mark.parametrize("name", sorted(HOSTILE) + ["solution"])
def test_nothing_survives_a_sandbox_run(sandboxed, name):
    report = sandboxed[0][name]
    timeout = sandboxed[2][name][1]
    assert report.workdir is not None and not os.path.exists(report.workdir)
    assert report.elapsed_s < STARTUP_TIMEOUT_S + timeout + 5  # never longer than the two deadlines
    if report.run_s is not None:
        assert report.run_s < timeout + 2
    if os.geteuid() == 0:
        assert SANDBOX_UID_RANGE[0] <= report.sandbox_uid < SANDBOX_UID_RANGE[1]
        assert processes_of_uid(report.sandbox_uid) == []
        for d in SHARED_TMP_DIRS:
            if os.path.isdir(d):
                assert all(e.stat(follow_symlinks=False).st_uid != report.sandbox_uid for e in os.scandir(d))


def test_the_server_process_is_fine_afterwards(sandboxed):
    _, server, _ = sandboxed
    assert server["fds"][1] <= server["fds"][0]  # every pipe closed (the checker uses no threads, only pipes)
    assert server["children"] == []  # every sandbox was reaped
    assert server["tmp_mode"][1] == server["tmp_mode"][0]  # the shared temporary directory is untouched
    assert SERVER_SECRET not in os.environ.values()
    # and it still computes normally
    assert trusted_report(SOLUTION_SOURCE).passed


def test_the_limits_were_applied(sandboxed):
    limits = sandboxed[0]["solution"].limits
    assert limits["RLIMIT_NPROC"] >= 1 and limits["RLIMIT_FSIZE"] == 1 << 20 and limits["RLIMIT_CORE"] == 0
    # the address-space limit is what Python + PyTorch mapped plus the budget, far below the machine's memory
    assert (1 << 30) < limits["RLIMIT_AS"] < (16 << 30)
    if os.geteuid() == 0:
        assert limits["RLIMIT_NPROC"] == 1  # a fresh user: no second task at all
        assert "unprivileged user" in sandboxed[0]["solution"].isolation


def test_the_environment_was_empty_and_files_outside_were_refused(sandboxed):
    text = message(sandboxed[0]["snoop"], CHECK_RUNS)
    assert SERVER_SECRET not in text
    found = text.split("FOUND", 1)[1].replace("\\", "")  # undo the Markdown escaping
    for key in ("HOME", "TMPDIR", "LANG", "OMP_NUM_THREADS"):
        assert f'"{key}"' in found
    for absent in ("PATH", "SERVER_SECRET_TOKEN", "PYTHONPATH", "USER"):
        assert f'"{absent}"' not in found
    assert '"secret": false' in found
    assert "ALLOWED" not in found
    assert found.count("PermissionError") == 5
    assert "my own folder is fine" in found
    assert '"big_file": "OSError"' in found  # RLIMIT_FSIZE: File too large
    assert sandboxed[0]["snoop"].passed is False
    assert not os.path.exists("/tmp/planted-by-student")


def test_deleting_files_outside_the_folder_fails(sandboxed, victim):
    assert (victim / "precious.txt").read_text() == "keep me"


def test_printing_megabytes_is_truncated_and_the_code_still_checked(sandboxed):
    report = sandboxed[0]["print_megabytes"]
    assert report.passed  # the function itself is right
    assert len(report.stdout) < 5000 and "more bytes not shown" in report.stdout
    assert "10.0 MB" in message(report, CHECK_RUNS)
