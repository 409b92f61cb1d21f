"""Several app processes behind nginx, with session affinity: for a class bigger than one process can hold.

    python -m devtools.cluster [--processes 2] [--port 8501] [--host 0.0.0.0] [--run-dir DIR]

One `streamlit run` process uses about one CPU core (Python runs one thread at a time), so a bigger class needs
more processes. A Streamlit session, and the files it made (`/media/...`), live in the process its websocket
reached, so nginx must send all of one browser's requests to one process: it sets a route cookie on a browser's
first response and hashes it (`deploy/nginx.conf.template` explains why not the client's address). `Cluster`
starts the processes on free loopback ports, fills in the template, runs nginx in the foreground from a run
directory (its pid file, logs, temporary files and cache all inside it, so no root is needed) and stops everything
on exit. The command line runs it until Ctrl-C; the tests (`tests/deploy/`) use the class.
"""

from __future__ import annotations

import argparse
import grp
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from devtools.appserver import ROOT, AppServer, free_port, wait_until_healthy

TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
INSTALL_HINT = "nginx is not installed: apt-get install -y nginx (Debian's package; its service need not run)"
#: The cookie nginx sets to route a browser (named in the template too).
ROUTE_COOKIE = "st_route"
#: Each app process's parameters in nginx's upstream: out of service for 10 s after 3 failed attempts within 10 s
#: (the template says why a busy process never fails one).
SERVER_PARAMETERS = "max_fails=3 fail_timeout=10s"
#: The template's two waits for a connected app process (its answer, and its reading of a request).
PROCESS_WAITS = re.compile(r"^(\s*proxy_(?:read|send)_timeout) \S+;", re.M)


class NginxMissingError(RuntimeError):
    """No nginx binary on PATH or in /usr/sbin."""


def nginx_binary() -> str | None:
    """The nginx executable, or None. Debian puts it in /usr/sbin, which an ordinary user's PATH often lacks."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def nginx_version(binary: str) -> tuple[int, ...]:
    """nginx's version, e.g. (1, 22, 1), from `nginx -v` (which prints it on stderr)."""
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10)
    match = re.search(r"nginx/(\d+(?:\.\d+)*)", out.stderr + out.stdout)
    return tuple(int(part) for part in match.group(1).split(".")) if match else (0,)


def render_config(listen: str, upstreams: Sequence[str], user: str = "", process_wait: str | None = None) -> str:
    """`deploy/nginx.conf.template` filled in: nginx on `listen` ("HOST:PORT"), in front of the app processes at
    `upstreams` ("HOST:PORT" each, on this machine or others), with `user` as its `user` line (root only).
    `process_wait` (an nginx time such as "30s"), if given, replaces the template's wait for a connected process
    (`proxy_read_timeout` and `proxy_send_timeout`), so a test can stall a process past uvicorn's timeouts within
    seconds rather than past the shipped wait."""
    servers = "\n".join(f"        server {address} {SERVER_PARAMETERS};" for address in upstreams)
    text = (TEMPLATE.read_text().replace("@LISTEN@", listen).replace("@UPSTREAM_SERVERS@", servers)
            .replace("@USER@", user))
    if process_wait is not None:
        text, found = PROCESS_WAITS.subn(rf"\1 {process_wait};", text)
        if found != 2:
            raise ValueError(f"the template has {found} of its two waits for a process (proxy_read_timeout and "
                             "proxy_send_timeout)")
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise ValueError(f"placeholders left in the nginx config: {left}")
    return text


def unprivileged_user_line() -> str:
    """The `user` line for nginx started as root: its workers drop to `nobody` (Debian's group: `nogroup`)."""
    if os.geteuid() != 0:
        return ""  # an ordinary user's nginx runs as that user; a `user` line would only draw a warning
    nobody = pwd.getpwnam("nobody")
    return f"user nobody {grp.getgrgid(nobody.pw_gid).gr_name};"


class Cluster:
    """`with Cluster(processes=2) as c: c.url` serves the app from `processes` Streamlit processes behind nginx.

    Every process gets the same `server.cookieSecret`, so a cookie one signed (Streamlit's XSRF cookie) is valid
    in every other, for instance after nginx moved a browser to another process because its own had died.
    `env` is added to every app process's environment. nginx listens on `host`:`port` (a free loopback port by
    default); `url` is the address to open on this machine. `run_dir` holds nginx's config, pid file, logs,
    temporary files and cache; a temporary one is made, and removed on exit, unless one is given.
    `make_app(k, env)`, if given, makes the k-th app process (unstarted) with `env` in its environment, wherever
    it is to run (`devtools.hosts`: in a network namespace); by default each is on a free loopback port.
    `process_wait` replaces the config's wait for a connected process (`render_config`).
    """

    def __init__(self, processes: int = 2, env: dict[str, str] | None = None, port: int | None = None,
                 host: str = "127.0.0.1", run_dir: Path | None = None, startup_timeout_s: float = 120.0,
                 make_app: Callable[[int, dict[str, str]], AppServer] | None = None,
                 process_wait: str | None = None) -> None:
        if processes < 1:
            raise ValueError("a cluster needs at least one app process")
        self.cookie_secret = secrets.token_hex(32)
        self.env = {**(env or {}), "STREAMLIT_SERVER_COOKIE_SECRET": self.cookie_secret}
        self.host = host
        self.port = port or free_port()
        self.url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.process_wait = process_wait
        self.apps = [make_app(k, self.env) for k in range(processes)] if make_app else []
        taken = {self.port}
        while len(self.apps) < processes:  # free ports, distinct from each other and from nginx's
            app = AppServer(env=self.env, startup_timeout_s=startup_timeout_s)
            if app.port not in taken:
                taken.add(app.port)
                self.apps.append(app)
        self._own_run_dir = run_dir is None
        self.run_dir = Path(run_dir) if run_dir else Path(tempfile.mkdtemp(prefix="attention-cluster-"))
        self.nginx: subprocess.Popen | None = None
        self._nginx_log: list[str] = []

    # --- what the tests and the command line read ---------------------------------------------------------------

    @property
    def app_pids(self) -> list[int]:
        return [app.proc.pid for app in self.apps if app.proc is not None]

    @property
    def app_addresses(self) -> list[str]:
        """Each app process's "HOST:PORT", as nginx's log names it, in the order of `app_pids`."""
        return [f"{app.host}:{app.port}" for app in self.apps]

    @property
    def nginx_pid(self) -> int | None:
        return self.nginx.pid if self.nginx is not None else None

    @property
    def access_log(self) -> Path:
        """nginx's log of requests: which process (`upstream=`) answered which browser (`route=`)."""
        return self.run_dir / "logs" / "access.log"

    @property
    def nginx_log(self) -> str:
        """What nginx wrote on stderr and in its error log."""
        error_log = self.run_dir / "logs" / "error.log"
        return "".join(self._nginx_log) + (error_log.read_text() if error_log.exists() else "")

    def statuses(self) -> Counter[int]:
        """How many requests nginx answered with each HTTP status so far (from its access log)."""
        log = self.access_log.read_text() if self.access_log.exists() else ""
        return Counter(int(m.group(1)) for m in re.finditer(r'^\S+ \[[^]]*\] "[^"]*" (\d{3}) ', log, re.M))

    def processes_taken_out(self) -> int:
        """How many times nginx took an app process out of service (its warning "upstream server temporarily
        disabled", written each time a process reaches `max_fails`)."""
        return self.nginx_log.count("upstream server temporarily disabled")

    def upstream_errors(self) -> Counter[str]:
        """nginx's errors and warnings about the app processes, by kind (the message up to its "while ...")."""
        kinds = re.findall(r"\[(?:error|warn)\] \d+#\d+: \*\d+ (.*?)(?: while |, client:)", self.nginx_log)
        return Counter(kinds)

    # --- starting and stopping ------------------------------------------------------------------------------------

    def start(self) -> Cluster:
        try:
            binary = nginx_binary()
            if binary is None:
                raise NginxMissingError(INSTALL_HINT)
            with ThreadPoolExecutor(len(self.apps)) as pool:  # the processes start side by side
                list(pool.map(AppServer.start, self.apps))
            self._start_nginx(binary)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_nginx(self, binary: str) -> None:
        for sub in ("logs", "tmp", "cache"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # root's nginx workers run as `nobody`: they must reach the temporary files and cache
            self.run_dir.chmod(0o755)
        config = self.run_dir / "nginx.conf"
        config.write_text(render_config(f"{self.host}:{self.port}", self.app_addresses, unprivileged_user_line(),
                                        self.process_wait))
        cmd = [binary, "-p", f"{self.run_dir}/", "-c", str(config)]
        if nginx_version(binary) >= (1, 19, 5):  # -e: errors before the config is read go to stderr, not /var/log
            cmd += ["-e", "stderr"]
        self.nginx = subprocess.Popen(cmd, cwd=self.run_dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True)
        threading.Thread(target=self._collect_nginx_log, name="nginx log", daemon=True).start()
        if wait_until_healthy(self.url, self.nginx, self.startup_timeout_s, lambda: self.nginx_log, "nginx"):
            return
        raise RuntimeError(f"nginx did not answer on {self.url} within {self.startup_timeout_s} s:\n"
                           + self.nginx_log[-3000:])

    def _collect_nginx_log(self) -> None:
        assert self.nginx is not None and self.nginx.stderr is not None
        for line in self.nginx.stderr:
            self._nginx_log.append(line)

    def restart_dead_apps(self) -> list[int]:
        """Start again, on its own port, every app process that has exited; return their indices.

        nginx sends a dead process's students to the others meanwhile (their sessions start afresh), and sends
        their routes back once the process answers again.
        """
        restarted = []
        for k, app in enumerate(self.apps):
            if app.proc is not None and app.proc.poll() is not None:
                self.apps[k] = fresh = app.fresh()  # on its address and port, which nginx's config names
                fresh.start()  # kept before it starts: `stop` ends it even if its start is interrupted
                restarted.append(k)
        return restarted

    def stop(self) -> None:
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.terminate()  # fast shutdown: open websockets would hold a graceful one up indefinitely
            try:
                self.nginx.wait(10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait(5)
        with ThreadPoolExecutor(max(1, len(self.apps))) as pool:
            list(pool.map(AppServer.stop, self.apps))
        if self._own_run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """systemd and `kill` stop a process with SIGTERM: leave through the same clean-up as Ctrl-C."""
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2,
                        help="app processes: about one per CPU core, as memory allows (each has its own caches)")
    parser.add_argument("--port", type=int, default=8501, help="nginx's port, above 1023 unless run as root")
    parser.add_argument("--host", default="0.0.0.0", help="nginx's address (default: every interface)")
    parser.add_argument("--run-dir", type=Path,
                        help="keep nginx's config, logs and cache here (default: a temporary directory, removed)")
    args = parser.parse_args(argv)
    if args.run_dir:
        args.run_dir.mkdir(parents=True, exist_ok=True)
    catch_stop_signals()
    cluster = Cluster(args.processes, port=args.port, host=args.host, run_dir=args.run_dir)
    failed = start_or_say_why(cluster.start, NginxMissingError)
    if failed:
        return failed
    with_host = f"http://{socket.getfqdn()}:{args.port}" if args.host in ("0.0.0.0", "") else cluster.url
    print(f"Serving the app at {with_host} ({args.processes} processes behind nginx). Ctrl-C stops it.")
    print(f"  nginx pid {cluster.nginx_pid}, app pids {cluster.app_pids}, logs in {cluster.run_dir / 'logs'}",
          flush=True)
    try:
        serve(cluster)
    finally:
        cluster.stop()
    return 0


def catch_stop_signals() -> None:
    """Ctrl-C and SIGTERM (systemd's and `kill`'s) both raise KeyboardInterrupt, so both leave through the
    caller's clean-up; Ctrl-C even when the process was started with SIGINT ignored."""
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def start_or_say_why(start: Callable[[], object], setup_error: type[Exception]) -> int:
    """Call `start`: 0 once it started, else the command line's exit code, with why on stderr: 2 when something it
    needs is missing (`setup_error`), 1 when the start failed, 130 on Ctrl-C (a failed start removes what it made)."""
    try:
        start()
    except setup_error as exc:
        print(exc, file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"could not start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted while starting; everything made was removed", file=sys.stderr)
        return 130
    return 0


def serve(cluster: Cluster) -> None:
    """Until Ctrl-C: start again every app process that exits, and print what the app processes log."""
    shown = [0] * len(cluster.apps)
    try:
        while True:
            time.sleep(1)
            try:
                for k in cluster.restart_dead_apps():
                    print(f"app process {k + 1} had exited; started again as pid {cluster.app_pids[k]}", flush=True)
                    shown[k] = 0
            except RuntimeError as exc:  # it is tried again a second later; the other processes keep serving
                print(f"an app process had exited and could not be started again: {exc}", flush=True)
            for k, app in enumerate(cluster.apps):  # what the app processes log (warnings, errors), as it comes
                lines = app.log.splitlines()
                for line in lines[shown[k]:]:
                    print(f"[app {k + 1}] {line}", flush=True)
                shown[k] = len(lines)
    except KeyboardInterrupt:
        print("stopping", flush=True)


if __name__ == "__main__":
    sys.exit(main())
