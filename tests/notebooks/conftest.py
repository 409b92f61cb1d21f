"""One kernel for every notebook this test process runs (each xdist worker starts its own): a kernel's start and
its import of PyTorch, pandas and Altair cost more CPU than most notebooks' own cells, and each notebook clears the
kernel's names first (``%reset -f``), so it runs as in a fresh kernel."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jupyter_client.manager import KernelManager

from tests.helpers.notebooks import started_kernel


@pytest.fixture(scope="session")
def kernel() -> Iterator[KernelManager]:
    yield from started_kernel()
