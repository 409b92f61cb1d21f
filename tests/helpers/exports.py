"""Helpers for testing the export menu: parse exported CSV/LaTeX back, and download files from a running page."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from unittest import mock

import numpy as np
import pandas as pd
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import chart_specs
from ui.export import chart_matrices


def parse_csv(text: str) -> tuple[np.ndarray, list[str], list[str]]:
    """An exported CSV back as ``(matrix, row labels, column labels)``."""
    df = pd.read_csv(io.StringIO(text), index_col=0, dtype={0: str})
    return df.to_numpy(dtype=np.float64), [str(r) for r in df.index], [str(c) for c in df.columns]


def parse_latex(text: str) -> np.ndarray:
    r"""An exported ``bmatrix`` back as a matrix (of the printed, rounded numbers)."""
    assert text.startswith("\\begin{bmatrix}\n") and text.endswith("\n\\end{bmatrix}"), text[:80]
    body = text.removeprefix("\\begin{bmatrix}\n").removesuffix("\n\\end{bmatrix}")
    return np.array([[float(x) for x in row.split("&")] for row in body.split("\\\\")])


def page_matrices(at: AppTest) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """Every exportable matrix of every chart the page drew, by title, read from the specs the browser got."""
    found = {}
    for spec, frames in chart_specs(at):
        for title, matrix, rows, cols in chart_matrices({**spec, "datasets": frames}):
            assert title not in found, f"two matrices titled {title!r}"
            found[title] = (matrix, rows, cols)
    return found


@contextlib.contextmanager
def recorded_downloads() -> Iterator[dict[str, Callable[[], str | bytes]]]:
    """Record the callable behind every deferred download button drawn inside the block, by file id.

    The app's runtime is gone once an AppTest run ends, so its media manager can no longer be asked.
    """
    files: dict[str, Callable[[], str | bytes]] = {}
    original = MediaFileManager.add_deferred

    def recording(self: MediaFileManager, data_callable: Callable[[], str | bytes], *args, **kwargs) -> str:
        file_id = original(self, data_callable, *args, **kwargs)
        files[file_id] = data_callable
        return file_id

    with mock.patch.object(MediaFileManager, "add_deferred", recording):
        yield files


def export_menu_keys(at: AppTest) -> list[str]:
    """The session-state keys of the page's export popovers, in page order: ``export_<fragment>_open`` for a
    `page_fragment` 's menu, ``export_<chart>_<hash>_open`` for a chart's own."""
    return [key for pop in at.get("popover")
            if (key := pop.proto.id.rsplit("-", 1)[-1]).startswith("export_") and key.endswith("_open")]


def open_export_menus(at: AppTest, prefix: str = "export_") -> None:
    """Open every export menu whose key starts with `prefix`, as a click would, and rerun.

    A closed menu holds no widgets (`ui.display.export_menu`), so its select box and download button
    exist only from the run after it was opened.
    """
    for key in export_menu_keys(at):
        if key.startswith(prefix):
            at.session_state[key] = True
    at.run()
    assert not at.exception


def download(at: AppTest, files: dict[str, Callable[[], str | bytes]], option: str,
             chart: str = "") -> tuple[str, str | bytes]:
    """Pick `option` (e.g. ``"attention weights · head 2 · CSV"``) in the export menu offering it, rerun,
    and click that menu's download button: ``(file name, content)``.

    `chart`: the start of the menu's key after ``export_`` (the fragment's name, or a chart's file name for a
    chart's own menu), to pick one menu among several offering `option`.
    """
    prefix = f"export_{chart}"
    open_export_menus(at, prefix)
    (menu,) = [s for s in at.selectbox if s.key and s.key.startswith(prefix) and option in s.options]
    menu.set_value(menu.options.index(option)).run()
    assert not at.exception
    button = at.download_button(key=menu.key.removesuffix("_file") + "_download")
    return button.label, files[button.proto.deferred_file_id]()
