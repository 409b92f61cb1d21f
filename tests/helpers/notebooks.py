"""Running a page's notebook as a student would: download it from the page's export menu, validate it, execute it
in a kernel, and read back the numbers it computed.

One kernel per test module (`kernel`, a module fixture): each notebook starts by clearing the kernel's names
(``%reset -f``), so it runs as in a fresh kernel without paying for PyTorch's import again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import nbformat
import numpy as np
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import APP, TIMEOUT
from tests.helpers.exports import download, recorded_downloads

NOTEBOOK = "Notebook (.ipynb)"
#: The marker of the line the appended cell prints (the notebook's numbers as JSON).
RESULTS = "NOTEBOOK-RESULTS "


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelManager]:
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)


def notebook_from_page(page: str, **query: str | list[str]) -> tuple[str, str]:
    """Open `page` with the link's `query` (a list: a repeated parameter), pick the notebook in its export menu
    and download it: ``(file name, text)``."""
    with recorded_downloads() as files:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.switch_page(page)
        at.query_params.update(query)
        at.run()
        assert not at.exception
        return download(at, files, NOTEBOOK)


def run_notebook(text: str, km: KernelManager, names: Sequence[str]) -> dict[str, Any]:
    """Validate the notebook, execute every cell (an error in any fails), and return the values of `names`
    (arrays as nested lists) as it left them."""
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    nb.cells.insert(0, new_code_cell("%reset -f"))
    nb.cells.append(new_code_cell(
        f"import json as _json, numpy as _np\nprint({RESULTS!r} + _json.dumps("
        f"{{_n: _np.asarray(globals()[_n]).tolist() for _n in {list(names)!r}}}))"))
    NotebookClient(nb, km=km, timeout=300, kernel_name="python3").execute()
    (line,) = [line for out in nb.cells[-1].outputs if out.output_type == "stream"
               for line in out.text.splitlines() if line.startswith(RESULTS)]
    return json.loads(line.removeprefix(RESULTS))


def assert_close(found: dict[str, Any], expected: dict[str, Any], atol: float = 1e-6) -> None:
    """Every expected number, name by name, to `atol`."""
    assert set(expected) <= set(found), set(expected) - set(found)
    for name, value in expected.items():
        np.testing.assert_allclose(np.asarray(found[name], dtype=float), np.asarray(value, dtype=float),
                                   rtol=0, atol=atol, err_msg=name)
