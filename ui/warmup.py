"""The server's start-up (`lifespan`). It imports slow modules in the background, so the first page a visitor
opens does not wait for them, sets the garbage collector's pace for serving (`collect_less_often`), runs each
step's native maths on the step's own thread (`native_pools_of_one`), and lets the C allocator keep the memory
its threads free for their next allocations (`keep_freed_memory`).

Two moments, two sets of modules:

* When the server starts (`lifespan`): the modules of the router and the landing page, Altair, pandas and
  pyarrow among them. Meanwhile the browser loads Streamlit's front end, which it needs before it connects and
  the first run can start, so the two overlap instead of following each other.
* Once a page has been sent (the router): PyTorch, which takes seconds to import. The landing page does not
  need it, but most other pages do; by the time a visitor opens the next page, the import has finished.

A run that needs a module earlier simply waits for it: Python's import lock makes a second import of a
module block until the first one is done, so a module is never seen half-initialised.

While they import, the cyclic garbage collector is paused, and what they loaded is frozen afterwards
(`collector_paused`): otherwise Python walks every object imported so far, again and again, as the imports grow.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from threadpoolctl import threadpool_limits

from ui.deployment import announce_start

#: What the first run of the landing page imports (the router's and the worked example's modules, and what
#: Streamlit and pyarrow load on first use: the emoji and icon names that check the page icons).
FIRST_PAGE_MODULES = ("ui.patches", "ui.url_state", "ui.layout", "ui.display", "ui.accessibility", "ui.navigation",
                      "ui.cache",
                      "ui.quiz", "ui.take_home", "notebooks.worked_example", "ui.charts.worked_example",
                      "ui.wording.worked_example", "core", "core.user_input", "core.designed_weights", "streamlit.emojis",
                      "streamlit.material_icon_names", "pyarrow.pandas_compat")

_lock = threading.Lock()
_started: set[str] = set()


def import_in_background(*modules: str, delay_s: float = 0.0) -> threading.Thread | None:
    """Start importing `modules` (in order) in a daemon thread, at most once per process per module.

    The thread waits `delay_s` seconds first: an import holds the interpreter (and one of few cores) for
    seconds, so it should not compete with the browser drawing the page that was just sent. Returns the
    thread, or None when every module is already imported or being imported.
    """
    with _lock:
        todo = [m for m in modules if m not in sys.modules and m not in _started]
        _started.update(todo)
    if not todo:
        return None

    def run() -> None:
        time.sleep(delay_s)
        with collector_paused():
            for name in todo:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a failed warm-up must not break the app; the page's own import reports it
                    pass

    thread = threading.Thread(target=run, name="warm-up imports", daemon=True)
    thread.start()
    return thread


_gc_lock = threading.Lock()
_gc_pauses = 0  # warm-up threads importing right now
_gc_was_enabled = True  # the collector's state when the first of them started


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Turn Python's cyclic garbage collector off while warm-up imports run; afterwards freeze what they loaded.

    An import allocates objects that live as long as the process (modules, functions, classes). Each time
    they grow by a quarter, Python runs a full collection that walks every one of them, holding the GIL,
    several times during a cold start and the PyTorch import, while the server's event loop serves the
    front end's files and the first page runs. Paused, none runs;
    `gc.freeze` then moves everything alive into the permanent generation, so later full collections skip
    it. Reference counting still frees everything as usual; only garbage in reference cycles waits (a few
    seconds at most), and cycles among objects alive at a freeze are never collected: a one-off, bounded by
    what the first visitors' sessions hold at the two freezes (after the first page's imports, after PyTorch's).
    Its effect on a cold start is measured in docs/performance.md.

    Nested and overlapping pauses (two warm-up threads) count: the collector comes back when the last one
    ends, and only if it was on when the first began.
    """
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        _gc_pauses += 1
        if _gc_pauses == 1:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.freeze()
                if _gc_was_enabled:
                    gc.enable()


#: Net allocations between two collections of the collector's youngest generation (Python's default is 700).
YOUNG_GENERATION_THRESHOLD = 20_000


def collect_less_often() -> None:
    """Collect the youngest generation every `YOUNG_GENERATION_THRESHOLD` net allocations instead of every 700.

    A slider step allocates tens of thousands of short-lived objects (a chart's schema objects, rows and JSON,
    the step's messages). Every 700 allocations the collector stops to look at the youngest ones; those still in
    use (the step is not over) survive, move to an older generation and are freed there by reference counting,
    but they count towards the next full collection, which walks every object of the process that is not frozen
    while the whole server waits. Collected less often, most temporaries are gone before the collector looks.
    Garbage in reference cycles waits a little longer; the older generations keep Python's thresholds. Measured
    in docs/performance.md.
    """
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)


#: The variables that size the native thread pools of libraries loaded after start-up (PyTorch's OpenMP pool
#: reads them when PyTorch is imported) and, read at their own import, NumPy's BLAS and MKL.
THREAD_POOL_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def native_pools_of_one() -> None:
    """Run the native maths of every script run (NumPy's matrix products, PyTorch's operations) on that run's own
    thread, unless the operator sized the pools in the environment.

    A server's sessions keep its cores busy, one script run each. A pool of worker threads adds nothing for a
    step's small matrices: after each operation its workers spin, waiting for the next, on the core a queued step
    needs. Pools loaded already (NumPy's BLAS, imported with Streamlit) are resized through threadpoolctl; the
    variables size those loaded later. Work that wants more threads asks for them while it runs (the training
    pages' `training.trainer.deterministic_torch`, the cost lab's `cost.measure`). Measured in
    docs/performance.md.
    """
    if any(name in os.environ for name in THREAD_POOL_ENV):
        return
    os.environ.update(dict.fromkeys(THREAD_POOL_ENV, "1"))
    threadpool_limits(limits=1)



#: glibc's `mallopt` parameters: free space a heap keeps at its top before it is given back to the kernel, and the
#: size from which a block is mapped on its own (and unmapped when freed) rather than taken from a heap.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Both at 32 MiB, glibc's ceiling for the second on 64-bit: a step's or a training's arrays (a few MB each) are
#: taken from the heaps, and each heap keeps up to this much free rather than giving it back after every pass.
KEEP_FREE_BYTES = 32 << 20
#: The variables in which an operator sets glibc's allocator themselves.
MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def keep_freed_memory() -> bool:
    """Let glibc's allocator keep the memory freed by the server's threads for their next allocations, unless the
    operator set the allocator in the environment; True if it was set here.

    Every script run has a thread of its own, and glibc gives each thread an arena. By default a heap gives its
    free top back to the kernel once it exceeds twice the largest block freed so far, so a pass that makes a few
    arrays of some MB each (a held-out score, a chart's data) and frees them gives the pages back, and the next
    pass faults each page in again, zeroed by the kernel. Kept, the next
    pass reuses them. The cost is memory: each arena may hold up to `KEEP_FREE_BYTES` free. Not glibc (macOS,
    musl): nothing changes. Measured in docs/performance.md.
    """
    if any(name in os.environ for name in MALLOC_ENV):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return mallopt(M_TRIM_THRESHOLD, KEEP_FREE_BYTES) == 1 and mallopt(M_MMAP_THRESHOLD, KEEP_FREE_BYTES) == 1


@contextlib.asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The `st.App`'s start-up (`streamlit_app.py`): log what this deployment got (`ui.deployment`: Python,
    PyTorch build, whether "Check my code" can run; read without importing PyTorch), log the class poll's
    presenter key if the server generated it (`ui.poll_services.announce_presenter_key`), set the collector's pace
    (`collect_less_often`), size the native thread pools (`native_pools_of_one`), let the allocator keep freed
    memory (`keep_freed_memory`), import `FIRST_PAGE_MODULES` in the background, then serve. (The library patches,
    `ui.patches`, are installed by the router's first run, which `AppTest` runs too.)

    Only starts the thread, so the server answers at once (its effect on a cold start: docs/performance.md).
    An `st.App` is served without Streamlit opening a browser tab; the shipped config is headless, so a plain
    script would not open one either.
    """
    announce_start()
    from ui.poll_services import announce_presenter_key  # here, not at the top: the server's import stays light

    announce_presenter_key()
    collect_less_often()
    native_pools_of_one()
    keep_freed_memory()
    import_in_background(*FIRST_PAGE_MODULES)
    yield
