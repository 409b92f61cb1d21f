"""Run code in a new Python process, for what only a fresh interpreter shows: which modules an import loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fresh_python(code: str, timeout: float = 300) -> str:
    """Run `code` in a new Python process from the project's root (nothing imported yet) and return its output.

    Fails on an error, with the end of the process's stderr.
    """
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
