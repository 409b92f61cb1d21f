"""A throwaway PostgreSQL server: Debian's binaries, a data directory of its own, removed afterwards.

`PostgresServer(bin_dir).start()` runs ``initdb`` into a new temporary directory and ``pg_ctl start`` on a free
loopback port (its socket in that directory too), trusting local connections, as the ``postgres`` user when
run as root (PostgreSQL refuses to run as root; the directory is handed to that user). `stop()` and `start()`
again keep the data: the poll's tests stop it in the middle of a round. `remove()` stops it and deletes the
directory.

`devtools.hosts` runs one in a network namespace of its own: `host` is the address it listens on, `clients` the
network (CIDR) whose connections it trusts too, and `prefix` the command that enters the namespace
(``ip netns exec NAME``), put before every PostgreSQL tool.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from devtools.appserver import free_port

INSTALL_HINT = ("PostgreSQL is not installed: apt-get install -y postgresql (Debian's package; its service need "
                "not run, the tools start their own server)")
#: The superuser initdb makes; the connections it trusts need no password.
USER = "poll"


def postgres_bin_dir() -> Path | None:
    """Debian's newest PostgreSQL binaries (/usr/lib/postgresql/VERSION/bin), or None."""
    found = [d for d in Path("/usr/lib/postgresql").glob("*/bin")
             if d.parent.name.isdigit() and (d / "initdb").is_file() and (d / "pg_ctl").is_file()]
    return max(found, key=lambda d: int(d.parent.name)) if found else None


def _as_server_user() -> list[str]:
    """The command prefix that runs PostgreSQL's tools unprivileged (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


class PostgresServer:
    def __init__(self, bin_dir: Path, host: str = "127.0.0.1", port: int | None = None, clients: str = "",
                 prefix: Sequence[str] = ()) -> None:
        self.bin_dir = bin_dir
        self.host = host
        self.port = port or free_port()
        self.prefix = list(prefix)
        self.base = Path(tempfile.mkdtemp(prefix="attention-poll-pg-"))
        self.data = self.base / "data"
        if os.geteuid() == 0:
            server_user = pwd.getpwnam("postgres")
            os.chown(self.base, server_user.pw_uid, server_user.pw_gid)
        self._tool("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "--no-sync", "-E", "UTF8")
        if clients:  # initdb trusts this machine's own connections only
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write(f"host all {USER} {clients} trust\n")

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@{self.host}:{self.port}/postgres"

    def _tool(self, name: str, *args: str) -> None:
        done = subprocess.run([*self.prefix, *_as_server_user(), str(self.bin_dir / name), *args],
                              capture_output=True, text=True, timeout=120, cwd=self.base)
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed: {done.stderr[-2000:]}{done.stdout[-2000:]}")

    def start(self) -> PostgresServer:
        options = (f"-p {self.port} -k {self.base} -c listen_addresses={self.host} -c fsync=off "
                   "-c max_connections=200")
        self._tool("pg_ctl", "-D", str(self.data), "-l", str(self.base / "server.log"), "-o", options, "-w",
                   "-t", "60", "start")
        return self

    def stop(self) -> None:
        self._tool("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def remove(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.stop()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
