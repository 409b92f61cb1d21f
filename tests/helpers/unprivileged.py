"""Running a command as another user id, with the running Python (and any other directories) reachable by it.

Tests that must not run as root (root passes every permission check) start their command as an unprivileged
user through ``setpriv``. The interpreter often lives under a directory that user cannot enter: pyenv's under
``/root`` (0700), a fresh virtual environment under ``mktemp -d`` (0700). The command then runs in a private
mount namespace where those directories are reachable, and nowhere else is opened.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

IS_ROOT = os.geteuid() == 0
#: Whether this machine can run a command as another user: root, with util-linux's setpriv and unshare.
CAN_SWITCH_USER = IS_ROOT and bool(shutil.which("setpriv") and shutil.which("unshare"))


def python_installations() -> list[Path]:
    """The directories the running interpreter needs: its base installation and, in a virtual environment, the
    environment (whose ``bin/python`` links to the base one, and which holds the packages)."""
    return sorted({Path(os.path.realpath(sys.base_prefix)), Path(os.path.realpath(sys.prefix))})


def closed_ancestor(path: Path) -> Path | None:
    """The outermost directory above `path` that other users cannot pass through, if any."""
    return next((a for a in reversed(path.parents) if not os.stat(a).st_mode & 0o001), None)


def as_user(uid: int, cmd: list[str], reachable: list[Path] | None = None) -> list[str]:
    """`cmd` run as `uid` (and its group id the same number), in a mount namespace where `reachable` can be reached.

    `reachable` defaults to the running interpreter's installations. Each one under a closed directory (e.g.
    /root, 0700, above /root/.pyenv/versions/3.12.1, whose libpython the loader must read as that user) is bound
    aside, an open tmpfs covers the closed directory, and the directory is bound back at its own path inside it.
    """
    script = ["set -e"]
    hidden = [Path(os.path.realpath(p)) for p in reachable or python_installations()]
    hidden = [p for p in hidden if closed_ancestor(p) is not None]
    stashes = {p: tempfile.mkdtemp(prefix="attention-reachable-") for p in hidden}
    closed = {closed_ancestor(p) for p in hidden}
    outermost = sorted(c for c in closed if not any(other in c.parents for other in closed))
    script += [f"mount --bind {shlex.quote(str(p))} {shlex.quote(stashes[p])}" for p in hidden]
    script += [f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(str(c))}" for c in outermost]
    for p in hidden:
        script += [f"mkdir -p {shlex.quote(str(p))}", f"mount --bind {shlex.quote(stashes[p])} {shlex.quote(str(p))}"]
    script.append(f"exec setpriv --reuid={uid} --regid={uid} --clear-groups --inh-caps=-all " + shlex.join(cmd))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)]
