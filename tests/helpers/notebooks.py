"""Running a page's notebook as a student would: download it from the page's export menu, validate it, execute it
in a kernel, and read back the numbers it computed.

One kernel per test process (`tests/notebooks/conftest.py`'s `kernel`, a session fixture): each notebook starts by
clearing the kernel's names (``%reset -f``), so it runs as in a fresh kernel without paying for PyTorch's import
again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import nbformat
import numpy as np
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import APP, TIMEOUT
from tests.helpers.exports import download, recorded_downloads

NOTEBOOK = "Notebook (.ipynb)"
#: The marker of the line the appended cell prints (the notebook's numbers as JSON).
RESULTS = "NOTEBOOK-RESULTS "
#: The appended cell's converter: a value (arrays, tensors, dicts and lists of them) as JSON's plain values.
PLAIN = """
import json as _json, numpy as _np

def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _np.asarray(value).tolist()
"""


def started_kernel() -> Iterator[KernelManager]:
    """A Python kernel for the notebooks to run in, shut down when the generator is closed."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)


def notebook_from_page(page: str, **query: str | list[str]) -> tuple[str, str]:
    """Open `page` with the link's `query` (a list: a repeated parameter), pick the notebook in its export menu
    and download it: ``(file name, text)``."""
    _, name, text = page_and_notebook(page, **query)
    return name, text


def page_and_notebook(page: str, press: Sequence[str] = (), **query: str | list[str]) -> tuple[AppTest, str, str]:
    """`notebook_from_page` after clicking the buttons keyed `press` in turn (Train): the page as it was left, and
    the notebook's file name and text."""
    with recorded_downloads() as files:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.switch_page(page)
        at.query_params.update(query)
        at.run()
        for key in press:  # a run this process trained already is shown trained, its button disabled
            if not at.button(key=key).disabled:
                at.button(key=key).click().run()
        assert not at.exception, at.exception
        name, text = download(at, files, NOTEBOOK)
        return at, name, text


def run_notebook(text: str, km: KernelManager, names: Sequence[str]) -> dict[str, Any]:
    """Validate the notebook, execute every cell (an error in any fails), and return the values of those of
    `names` it defined (arrays as nested lists) as it left them."""
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    nb.cells.insert(0, new_code_cell("%reset -f"))
    found = f"{{_n: _plain(globals()[_n]) for _n in {list(names)!r} if _n in globals()}}"
    nb.cells.append(new_code_cell(PLAIN + f"print({RESULTS!r} + _json.dumps({found}))"))
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
