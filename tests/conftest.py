"""The suite's distribution over xdist's workers (pyproject.toml: ``--dist loadgroup``).

Tests go to whichever worker is free, one by one, except the tests of a file that share a fixture built once per
module (a server, a cluster, a trained model, a warm sandbox): those stay together on one worker, which builds it
once. Session fixtures (the browser tests' app server and Chromium, the PostgreSQL server) are built once per
worker either way.

How many workers ``-n auto`` starts: one per core the run may use, plus `EXTRA_WORKERS`, at most
``--maxprocesses`` (pyproject.toml). ``PYTEST_XDIST_AUTO_NUM_WORKERS=<n>`` sets another number for one run.
"""

from __future__ import annotations

import os

import pytest

from tests.helpers.component_scan import scan_once

#: Workers beyond one per core (docs/development.md, "Tests and tiers", has the runs that chose it). A browser test
#: spends part of its time waiting for Chromium and the app server, so a worker more than the cores keeps both
#: cores busier; 0 goes back to one worker per core.
EXTRA_WORKERS = 1

# The shared tests' helpers assert too; their failures should say as much as a test's own asserts do.
pytest.register_assert_rewrite("tests.helpers.registry")

# Every `AppTest` of a process fills its component registry from one scan of the installed packages.
scan_once()


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(items):
    for item in items:
        defs = getattr(item, "_fixtureinfo", None)
        scopes = {d.scope for ds in (defs.name2fixturedefs.values() if defs else ()) for d in ds}
        if scopes & {"module", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def pytest_xdist_auto_num_workers(config):
    """One worker per core this process may run on, plus `EXTRA_WORKERS`; None (xdist's own count) when
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` is set, which xdist then reads."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + EXTRA_WORKERS
