"""Start the app with `streamlit run` on a free loopback port, wait for it, stop it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from devtools.box import Box

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_healthy(url: str, proc: subprocess.Popen, timeout_s: float, log: Callable[[], str], name: str) -> bool:
    """Poll ``url/_stcore/health`` until it answers "ok" (True) or `timeout_s` passes (False).

    Raises with the end of `log()` if `proc`, the process `name` that should answer, exits meanwhile.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            time.sleep(0.2)  # the log thread reads what is left
            raise RuntimeError(f"{name} exited during start-up (code {proc.returncode}):\n" + log()[-3000:])
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return True
        except OSError:
            time.sleep(0.1)
    return False


class AppServer:
    """`with AppServer() as srv: srv.url` runs the app headless for the duration of the block."""

    def __init__(self, script: str = "streamlit_app.py", startup_timeout_s: float = 60.0,
                 env: dict[str, str] | None = None, box: Box | None = None, host: str = "127.0.0.1",
                 port: int | None = None, prefix: Sequence[str] = ()) -> None:
        self.script = script
        self.box = box  # a cgroup the server runs in (`devtools.box`), or None
        self.env = env or {}
        self.host = host
        self.port = port or free_port()
        self.url = f"http://{host}:{self.port}"
        self.prefix = list(prefix)  # a command to run it under, e.g. `ip netns exec NAME` (devtools.hosts)
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.ready_after_s = float("nan")
        self._log_lines: list[str] = []

    def start(self) -> AppServer:
        cmd = [*self.prefix, sys.executable, "-m", "streamlit", "run", self.script, "--server.headless", "true",
               "--server.port", str(self.port), "--server.address", self.host,
               "--browser.gatherUsageStats", "false"]  # the rest as `.streamlit/config.toml` ships it
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                     preexec_fn=None if self.box is None else self.box.enter)
        threading.Thread(target=self._collect_log, name="app server log", daemon=True).start()
        if wait_until_healthy(self.url, self.proc, self.startup_timeout_s, lambda: self.log, "streamlit"):
            self.ready_after_s = time.perf_counter() - self.started_at
            return self
        self.stop()
        raise RuntimeError(f"streamlit did not answer on {self.url} within {self.startup_timeout_s} s")

    def _collect_log(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:  # read as it comes, so the server never blocks on a full pipe
            self._log_lines.append(line)

    @property
    def log(self) -> str:
        """What the server has written to its log (stderr) so far."""
        return "".join(self._log_lines)

    def rss_mb(self) -> float:
        """Resident memory of the server process, in MB (from /proc)."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def fresh(self) -> AppServer:
        """A new, unstarted server like this one: same script, environment, address and port (a restart)."""
        return AppServer(self.script, self.startup_timeout_s, env=self.env, box=self.box, host=self.host,
                         port=self.port, prefix=self.prefix)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def running_or_fresh(server: AppServer | None, profiled: bool = False) -> contextlib.AbstractContextManager[AppServer]:
    """`server`, already running and left running after the block; or, if None, a new `AppServer()` started for the
    block and stopped after it. A `profiled` run needs the new one: py-spy writes its files when the server exits."""
    if server is not None and profiled:
        raise ValueError("a profile is written when its server stops: profile a fresh server, not a running one")
    return AppServer() if server is None else contextlib.nullcontext(server)


class RouterPage(NamedTuple):
    file: str  # e.g. "app_pages/soft_lookup.py"
    name: str  # the file's stem, e.g. "soft_lookup"
    url_path: str  # what follows the host in the browser: the stem, or "" for the default page
    title: str


def router_pages(router: Path = ROOT / "streamlit_app.py") -> list[RouterPage]:
    """Every page registered in the router, in its order.

    Streamlit derives a page's URL path from its file name, except for the
    default page, which is served at "/".
    """
    import re

    pattern = r'st\.Page\(\s*"((?:\w+/)*(\w+)\.py)",\s*title="([^"]+)"([^)]*)\)'
    return [
        RouterPage(m.group(1), m.group(2), "" if "default=True" in m.group(4) else m.group(2), m.group(3))
        for m in re.finditer(pattern, router.read_text())
    ]
