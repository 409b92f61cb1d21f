"""Several "machines" on this one computer: each a Linux network namespace with its own app processes, behind one
nginx, and the class poll on a PostgreSQL server in a namespace of its own.

    sudo python -m devtools.hosts [--machines 2] [--processes 2] [--port 8501] [--host 0.0.0.0]
                                  [--presenter-key KEY]

It is the layout of docs/deployment.md (a department's own servers) in miniature. A bridge in this, the root,
namespace holds the address .1 of a private /24 network; each namespace is joined to it by a veth pair: machine k
at .1k (its app processes on ports 8501, 8502, ... of that address), the database at .100. nginx runs here, in
the root namespace, and reaches the processes through the bridge, as the tests do. The machines share only what
the recipe shares: the cookie secret and the presenter key (in every process's environment) and the poll's
PostgreSQL server (its URL). Each has a poll data directory of its own, so a process not given the database keeps
its poll on its own "machine", as it would on a real one (the namespaces share every other file).

Needs root (namespaces and links), iproute2's `ip`, nginx, PostgreSQL and util-linux's `setpriv`. `Hosts` removes
whatever it made, on exit, on a failed start, on Ctrl-C and on SIGTERM: its processes (and any other left in its
namespaces), the namespaces, the bridge and its links, the data directories. The tests (`tests/deploy/`) use the
class; the command line runs it until Ctrl-C.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from devtools.appserver import AppServer
from devtools.cluster import INSTALL_HINT as NGINX_HINT
from devtools.cluster import Cluster, catch_stop_signals, nginx_binary, serve, start_or_say_why
from devtools.postgres import INSTALL_HINT as POSTGRES_HINT
from devtools.postgres import PostgresServer, postgres_bin_dir
from poll.factory import DATA_DIR_ENV, DATABASE_URL_ENV
from poll.presenter_key import PRESENTER_KEY_ENV, TRUSTED_PROXIES_ENV

#: Every namespace and link made here starts with this (then a random tag of the run, so runs never collide).
NAME_PREFIX = "attn"
#: A machine's first app process listens on this port of its own address; the next ones count up.
APP_PORT = 8501
POSTGRES_PORT = 5432
#: The private networks tried, 10.251.X.0/24 for a random X not already on this computer.
SUBNET_BASE = "10.251"


class HostsSetupError(RuntimeError):
    """Not root, or a tool missing: nothing was made."""


def missing_requirements() -> list[str]:
    """What stops `Hosts` from starting here, one sentence each (empty when nothing does)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("devtools.hosts must run as root: it makes network namespaces and links "
                        "(sudo python -m devtools.hosts)")
    if shutil.which("ip") is None:
        problems.append("iproute2's `ip` is not installed: apt-get install -y iproute2")
    if shutil.which("setpriv") is None:
        problems.append("util-linux's `setpriv` is not installed: apt-get install -y util-linux")
    if nginx_binary() is None:
        problems.append(NGINX_HINT)
    if postgres_bin_dir() is None:
        problems.append(POSTGRES_HINT)
    return problems


def ip(*args: str) -> str:
    """Run `ip ARGS`; its output, or a RuntimeError with what it said."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def free_subnet() -> str:
    """"10.251.X" for an X whose /24 overlaps no address or route on this computer."""
    taken = [ipaddress.ip_network(word, strict=False)
             for line in ip("-4", "-o", "addr").splitlines() + ip("-4", "route").splitlines()
             for word in line.split() if "/" in word and word[0].isdigit()]
    for x in random.sample(range(256), 256):
        candidate = ipaddress.ip_network(f"{SUBNET_BASE}.{x}.0/24")
        if not any(candidate.overlaps(net) for net in taken):
            return f"{SUBNET_BASE}.{x}"
    raise RuntimeError(f"no free /24 network under {SUBNET_BASE}.0.0/16 on this computer")


@dataclass
class Machine:
    """One namespace: its name here ("m1", "db"), the kernel's name for it, its address, its data directory."""

    name: str
    netns: str
    address: str
    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)  # added to its app processes' environment, last

    @property
    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside this machine."""
        return ["ip", "netns", "exec", self.netns]


class Hosts:
    """`with Hosts(machines=2, processes=2) as h: h.url` serves the app from `machines` namespaces of `processes`
    app processes each, behind one nginx (`devtools.cluster.Cluster`), the poll on PostgreSQL in a namespace of
    its own.

    `env` is added to every app process's environment, `machine_env[k]` to machine k's after it (one machine's
    own settings, which win). Without a presenter key in `env`, one is made (`presenter_key`). nginx listens on
    `host`:`port` (a free loopback port by default); `run_dir` as for `Cluster`.
    """

    def __init__(self, machines: int = 2, processes: int = 2, env: dict[str, str] | None = None,
                 machine_env: list[dict[str, str]] | None = None, port: int | None = None, host: str = "127.0.0.1",
                 run_dir: Path | None = None, startup_timeout_s: float = 180.0) -> None:
        if machines < 1 or processes < 1:
            raise ValueError("at least one machine of at least one app process")
        self.processes = processes
        self.presenter_key = (env or {}).get(PRESENTER_KEY_ENV) or secrets.token_urlsafe(24)
        self.env = {**(env or {}), PRESENTER_KEY_ENV: self.presenter_key}
        self.tag = secrets.token_hex(2)
        self.base = Path(tempfile.mkdtemp(prefix=f"attention-hosts-{self.tag}-"))  # removed by `stop`
        self.bridge = f"{NAME_PREFIX}{self.tag}br"
        names = [f"m{k + 1}" for k in range(machines)]
        extra = list(machine_env or [])
        self.machines = [Machine(name, f"{NAME_PREFIX}-{self.tag}-{name}", "", self.base / name,
                                 extra[k] if k < len(extra) else {}) for k, name in enumerate(names)]
        self.database = Machine("db", f"{NAME_PREFIX}-{self.tag}-db", "", self.base / "db")
        self.subnet = ""  # "10.251.X", chosen at start
        self.cluster: Cluster | None = None
        self.startup_timeout_s = startup_timeout_s
        self._cluster_args = dict(port=port, host=host, run_dir=run_dir, startup_timeout_s=startup_timeout_s)
        self.postgres: PostgresServer | None = None
        self._made_bridge = False
        self._made_namespaces: list[str] = []

    # --- what the tests and the command line read ---------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self.cluster is not None, "not started"
        return self.cluster.url

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge: where nginx's requests reach the machines from."""
        return f"{self.subnet}.1"

    @property
    def database_url(self) -> str:
        assert self.postgres is not None, "not started"
        return self.postgres.url

    def machine_of(self, address: str) -> str:
        """The machine ("m1", ...) of an app process's "HOST:PORT" (as `Cluster.app_addresses` and nginx's log
        name it)."""
        host = address.rsplit(":", 1)[0]
        return next(m.name for m in self.machines if m.address == host)

    def kill(self, address: str) -> None:
        """Kill the app process at `address` at once (SIGKILL), as a crash would."""
        assert self.cluster is not None
        app = self.cluster.apps[self.cluster.app_addresses.index(address)]
        assert app.proc is not None
        app.proc.send_signal(signal.SIGKILL)
        app.proc.wait(10)

    # --- starting and stopping ------------------------------------------------------------------------------------

    def _make_app(self, k: int, env: dict[str, str]) -> AppServer:
        machine = self.machines[k // self.processes]
        return AppServer(env={**env, DATA_DIR_ENV: str(machine.data_dir), **machine.env},
                         startup_timeout_s=self.startup_timeout_s, host=machine.address,
                         port=APP_PORT + k % self.processes, prefix=machine.prefix)

    def start(self) -> Hosts:
        try:
            problems = missing_requirements()
            if problems:
                raise HostsSetupError("; ".join(problems))
            for machine in self.machines:
                machine.data_dir.mkdir(parents=True)
            self._network_up()
            bin_dir = postgres_bin_dir()
            assert bin_dir is not None
            self.postgres = PostgresServer(bin_dir, host=self.database.address, port=POSTGRES_PORT,
                                           clients=f"{self.subnet}.0/24", prefix=self.database.prefix).start()
            self.cluster = Cluster(len(self.machines) * self.processes,
                                   env={**self.env, DATABASE_URL_ENV: self.postgres.url,
                                        TRUSTED_PROXIES_ENV: self.gateway}, make_app=self._make_app,
                                   **self._cluster_args)
            self.cluster.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _network_up(self) -> None:
        """The bridge, at .1, and each namespace joined to it by a veth pair (the namespace's end named eth0)."""
        self.subnet = free_subnet()
        ip("link", "add", self.bridge, "type", "bridge")
        self._made_bridge = True
        ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        hosts = [(m, f"{self.subnet}.{11 + k}") for k, m in enumerate(self.machines)]
        for machine, address in [*hosts, (self.database, f"{self.subnet}.100")]:
            ip("netns", "add", machine.netns)
            self._made_namespaces.append(machine.netns)
            machine.address = address
            link = f"{NAME_PREFIX}{self.tag}{machine.name}"  # at most 15 characters, the kernel's limit
            ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", machine.netns)
            ip("link", "set", link, "master", self.bridge, "up")
            ip("-n", machine.netns, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", machine.netns, "link", "set", "eth0", "up")
            ip("-n", machine.netns, "link", "set", "lo", "up")

    def stop(self) -> None:
        """Remove everything made, in the reverse order; every step is tried, and what failed is said on stderr."""
        steps = [("nginx and the app processes", self.cluster.stop if self.cluster else None),
                 ("PostgreSQL", self.postgres.remove if self.postgres else None),
                 *((f"namespace {ns}", lambda ns=ns: self._remove_namespace(ns)) for ns in self._made_namespaces),
                 ("the bridge", (lambda: ip("link", "del", self.bridge)) if self._made_bridge else None),
                 ("the data directories", lambda: shutil.rmtree(self.base, ignore_errors=True))]
        for what, step in steps:
            if step is None:
                continue
            try:
                step()
            except Exception as exc:  # the next steps still run
                print(f"devtools.hosts: could not remove {what}: {exc}", file=sys.stderr)
        self._made_namespaces, self._made_bridge = [], False

    @staticmethod
    def _remove_namespace(netns: str) -> None:
        """Kill whatever still runs in `netns` (a process's children, say), then delete it (and its link)."""
        deadline = time.monotonic() + 10
        while pids := ip("netns", "pids", netns).split():
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {pids} would not end")
            time.sleep(0.1)
        ip("netns", "del", netns)

    def __enter__(self) -> Hosts:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.hosts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--machines", type=int, default=2, help="namespaces with app processes")
    parser.add_argument("--processes", type=int, default=2, help="app processes on each machine")
    parser.add_argument("--port", type=int, default=8501, help="nginx's port")
    parser.add_argument("--host", default="0.0.0.0", help="nginx's address (default: every interface)")
    parser.add_argument("--presenter-key", help=f"the lecturer's key (default: made now and printed); or "
                                                f"{PRESENTER_KEY_ENV} in the environment")
    args = parser.parse_args(argv)
    catch_stop_signals()
    key = args.presenter_key or os.environ.get(PRESENTER_KEY_ENV)
    hosts = Hosts(args.machines, args.processes, env={PRESENTER_KEY_ENV: key} if key else None, port=args.port,
                  host=args.host)
    failed = start_or_say_why(hosts.start, HostsSetupError)
    if failed:
        return failed
    assert hosts.cluster is not None
    shown = f"http://{socket.getfqdn()}:{args.port}" if args.host in ("0.0.0.0", "") else hosts.url
    print(f"Serving the app at {shown}: {args.machines} machines of {args.processes} processes behind nginx "
          f"(pid {hosts.cluster.nginx_pid}). Ctrl-C stops it and removes everything.")
    for machine in hosts.machines:
        pids = [app.proc.pid for app in hosts.cluster.apps if app.host == machine.address and app.proc]
        print(f"  {machine.name}: namespace {machine.netns}, {machine.address}, app pids {pids}")
    print(f"  db: namespace {hosts.database.netns}, the poll at {hosts.database_url}")
    print(f"  presenter key: {hosts.presenter_key}", flush=True)
    try:
        serve(hosts.cluster)
    finally:
        hosts.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
