"""Cloud's box (`devtools.box`): a process started in it runs under its limits, and the box goes away after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devtools.box import Box

pytestmark = pytest.mark.skipif(not Box.available(), reason="a cgroup box needs root and cpu and memory controllers")


def test_a_process_started_in_the_box_is_limited_to_one_core_and_cloud_memory():
    with Box() as box:
        child = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=box.enter)
        try:
            memberships = Path(f"/proc/{child.pid}/cgroup").read_text()
            assert memberships.count(box.name) == len(box.dirs) >= 1, memberships
            limits = {p.name: p.read_text().split() for d in box.dirs
                      for p in (d / "cpu.max", d / "cpu.cfs_quota_us", d / "memory.max", d / "memory.limit_in_bytes")
                      if p.exists()}
            quota = limits.get("cpu.max", limits.get("cpu.cfs_quota_us"))[0]
            assert int(quota) == 100_000
            memory = int(limits.get("memory.max", limits.get("memory.limit_in_bytes"))[0])
            assert 2.6e9 < memory <= 2.7e9
        finally:
            child.kill()
            child.wait()
    assert not any(d.exists() for d in box.dirs)


def test_a_box_left_with_a_process_inside_still_goes_away():
    with Box() as box:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=box.enter)
    try:
        assert not any(d.exists() for d in box.dirs)
        assert box.name not in Path(f"/proc/{child.pid}/cgroup").read_text()
    finally:
        child.kill()
        child.wait()
