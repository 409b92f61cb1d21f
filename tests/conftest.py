"""The suite's distribution over xdist's workers (pyproject.toml: ``--dist loadgroup``).

Tests go to whichever worker is free, one by one, except the tests of a file that share a fixture built once per
module (a server, a cluster, a trained model, a warm sandbox): those stay together on one worker, which builds it
once. Session fixtures (the browser tests' app server and Chromium, the PostgreSQL server) are built once per
worker either way.

The files whose tests mostly wait (on a stopped process, a benchmark's clock) are handed out first, so that their
waiting overlaps the other tests' work instead of leaving a core idle at the end.
"""

from __future__ import annotations

import pytest

#: Files whose tests spend most of their time waiting rather than computing: a process stopped for longer than
#: nginx's read timeout, benchmarks that run for a set time, a cluster's start. The longest first.
WAITING_FILES = ("tests/deploy/test_upstream_health.py", "tests/test_benchmarks.py", "tests/deploy/test_cluster.py")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(items):
    for item in items:
        defs = getattr(item, "_fixtureinfo", None)
        scopes = {d.scope for ds in (defs.name2fixturedefs.values() if defs else ()) for d in ds}
        if scopes & {"module", "package"}:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    first = {path: k for k, path in enumerate(WAITING_FILES)}
    items[:] = sorted(items, key=lambda item: first.get(item.nodeid.split("::")[0], len(first)))  # stable
