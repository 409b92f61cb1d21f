"""Attacks on the sandbox, checked from outside, with the server as root and as an unprivileged user.

A copy of the app (the checker's packages, ``streamlit_app.py`` and a ``.streamlit/secrets.toml``
holding a canary) is made in a temporary directory; `tests/helpers/sandbox_driver.py` plays the server
from inside that copy, with a canary in its environment, and checks every submission of
`tests.helpers.sandbox_attacks` plus the reference solution. The unprivileged run owns the copy and runs
as a user id of its own through ``setpriv`` (with the Python installation made reachable by a
private mount namespace when it lives under a directory that user cannot enter), so there only
the kernel's filter stands between a submission and the app's files: exactly a Community Cloud
deployment. Afterwards, from outside: no canary anywhere in any report, the app's files
byte-identical, nothing created, no connection to a listener the test opened, no process left.

`test_without_the_filter_the_same_attacks_get_out` runs the same attacks with the filter
skipped, to show that they are real and that these checks see an escape.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from exercise.sandbox import Sandbox, check_submission
from tests.helpers.sandbox_attacks import ATTACKS, CANARY_ENV, CANARY_FILE, SOLUTION, render
from tests.helpers.unprivileged import CAN_SWITCH_USER, IS_ROOT, as_user

ROOT = Path(__file__).resolve().parents[2]
#: The unprivileged server's user id (no account needed).
APP_UID = 54321
COPIED = ("core", "exercise", "streamlit_app.py", ".streamlit/config.toml", "tests/helpers/sandbox_driver.py")


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def make_app_copy(base: Path) -> tuple[Path, Path]:
    """The app's checker, router and config, plus a secrets file with the canary."""
    app = base / "app"
    for rel in COPIED:
        src, dst = ROOT / rel, app / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)
    secrets_file = app / ".streamlit" / "secrets.toml"
    secrets_file.write_text(f'API_TOKEN = "{CANARY_FILE}"\n# {"padding " * 16}\n')  # the canary in its first 64 bytes
    return app, secrets_file


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def processes_with(word: str) -> list[int]:
    """Processes whose command line contains `word`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if word.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def processes_of(uid: int) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                found.append(int(pid))
        except OSError:
            continue
    return found


def files_named(word: str, *dirs: Path) -> list[str]:
    hits = []
    for d in dirs:
        for dirpath, dirnames, filenames in os.walk(d):
            hits += [os.path.join(dirpath, n) for n in dirnames + filenames if word in n]
    return hits


def as_unprivileged(cmd: list[str], installations: list[Path] | None = None) -> list[str]:
    """`cmd` run as `APP_UID`, with the Python installations reachable by it (`tests.helpers.unprivileged`)."""
    return as_user(APP_UID, cmd, installations)


@pytest.fixture(scope="module", params=["root", "unprivileged"])
def attacked(request):
    """Every attack and the reference solution, checked by a server of the given kind; the machine around it."""
    if request.param == "root" and not IS_ROOT:
        pytest.skip("the root run needs root")
    if request.param == "unprivileged" and IS_ROOT and not CAN_SWITCH_USER:
        pytest.skip("running the server as another user needs setpriv and unshare (util-linux)")
    base = Path(tempfile.mkdtemp(prefix="attention-security-", dir="/tmp"))
    os.chmod(base, 0o755)
    app, secrets_file = make_app_copy(base)
    marker = str(1_000_000 + secrets.randbelow(9_000_000))  # also a valid `sleep` argument
    listener = Listener()
    submissions = {name: render(name, str(app), str(secrets_file), listener.port, marker) for name in ATTACKS}
    submissions["solution"] = SOLUTION
    cmd = [sys.executable, str(app / "tests" / "helpers" / "sandbox_driver.py"), str(app)]
    if request.param == "unprivileged" and IS_ROOT:
        subprocess.run(["chown", "-R", f"{APP_UID}:{APP_UID}", str(app)], check=True)
        cmd = as_unprivileged(cmd)
    before = tree_hashes(app)
    env = {**os.environ, "API_TOKEN": CANARY_ENV, "HOME": str(app)}
    try:
        proc = subprocess.run(cmd, input=json.dumps(submissions), capture_output=True, text=True, timeout=600,
                              env=env, cwd=app)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout)
        yield {
            "who": request.param, "result": result, "reports": result["reports"], "app": app,
            "before": before, "after": tree_hashes(app), "connections": listener.connections,
            "marker_processes": processes_with(marker),
            "app_user_processes": processes_of(APP_UID) if request.param == "unprivileged" and IS_ROOT else [],
            "marker_files": files_named(marker, app, Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")),
        }
    finally:
        listener.close()
        for pid in processes_with(marker):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(not CAN_SWITCH_USER,
                    reason="running as another user needs root, setpriv and unshare (util-linux)")
def test_the_unprivileged_run_reaches_a_virtual_environment_in_a_closed_directory(tmp_path):
    """The README's reader tests in a virtual environment, often under a 0700 directory (/root, `mktemp -d`):
    the unprivileged server must still start its interpreter and import the environment's own packages."""
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    venv = closed / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    site_packages = next((venv / "lib").glob("python3.*/site-packages"))
    (site_packages / "only_in_this_environment.py").write_text("")
    probe = "import os, sys, only_in_this_environment; print(os.getuid(), sys.prefix)"
    installations = [Path(os.path.realpath(sys.base_prefix)), venv]
    done = subprocess.run(as_unprivileged([str(venv / "bin" / "python"), "-c", probe], installations),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(APP_UID), str(venv)]


def test_the_sandbox_proves_itself_and_the_reference_solution_passes(attacked):
    assert attacked["result"]["available"], attacked["result"]["reason"]
    solution = attacked["reports"]["solution"]
    assert solution["passed"], solution["checks"]
    assert "seccomp filter" in solution["isolation"]
    expected_user = "unprivileged user" if attacked["who"] == "root" else "server's user"
    assert expected_user in solution["isolation"]


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_no_canary_reaches_the_report(attacked, name):
    text = json.dumps(attacked["reports"][name])
    assert CANARY_FILE not in text and CANARY_ENV not in text
    assert attacked["reports"][name]["passed"], attacked["reports"][name]["checks"]  # the function itself is right
    outcomes = [line.split()[0] for line in attacked["reports"][name]["stdout"].splitlines()]
    assert len(outcomes) == len(ATTACKS[name]) and set(outcomes) <= {"GOT", "REFUSED"}  # every attempt was made


def test_the_apps_files_are_byte_identical_and_nothing_was_created(attacked):
    assert attacked["after"] == attacked["before"]
    assert attacked["marker_files"] == []


def test_no_submission_reached_the_listener(attacked):
    assert attacked["connections"] == 0


def test_no_process_was_started_or_left_behind(attacked):
    assert attacked["marker_processes"] == []
    assert attacked["app_user_processes"] == []  # the driver, its worker and every child are gone
    for report in attacked["reports"].values():
        if report["sandbox_uid"] is not None:
            assert processes_of(report["sandbox_uid"]) == []


def test_the_worker_was_not_signalled_away(attacked):
    stdout = attacked["reports"]["signal_worker"]["stdout"]
    assert stdout.count("REFUSED") == len(ATTACKS["signal_worker"])


def test_without_the_filter_the_same_attacks_get_out(tmp_path):
    """The attacks are real, and these checks see an escape: with the filter skipped, files and sockets leak."""
    base = Path(tempfile.mkdtemp(prefix="attention-security-", dir="/tmp"))
    os.chmod(base, 0o755)
    app, secrets_file = make_app_copy(base)
    listener = Listener()
    unfiltered = Sandbox(filtered=False)
    try:
        leaked = {}
        for name in ("read_open", "read_numpy", "read_torch", "read_ctypes", "connect_socket"):
            run = unfiltered.run(render(name, str(app), str(secrets_file), listener.port, "0"), (), 10.0)
            leaked[name] = CANARY_FILE in run.stdout
    finally:
        unfiltered.close()
        listener.close()
        shutil.rmtree(base, ignore_errors=True)
    assert leaked == {"read_open": True, "read_numpy": True, "read_torch": True, "read_ctypes": True,
                      "connect_socket": False}
    assert listener.connections >= 1


def test_a_host_that_cannot_filter_keeps_execution_off(tmp_path):
    """Fail closed: the self-test catches a worker that skips the filter, and then nothing runs."""
    unfiltered = Sandbox(filtered=False)
    planted = Path(tempfile.gettempdir()) / f"planted-{secrets.token_hex(4)}"
    try:
        availability = unfiltered.availability()
        report = check_submission(f"open({str(planted)!r}, 'w').write('x')\n" + SOLUTION, unfiltered)
    finally:
        unfiltered.close()
    assert not availability.available
    assert "a file could be opened" in availability.reason
    assert "a network socket could be created" in availability.reason
    assert not report.passed and "Code execution is off on this server" in report.checks[0].message
    assert "python -m exercise" in report.checks[0].message
    assert not planted.exists()
