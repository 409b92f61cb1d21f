"""`ui.warmup`: slow imports started in the background, once."""

import ast
import asyncio
import os
import re
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from streamlit.web.server.app_discovery import discover_asgi_app

from tests.helpers.fresh_process import fresh_python
from tests.helpers.installed import installed_build_words
from ui import warmup
from ui.warmup import import_in_background


def test_imports_in_the_background_once():
    name = "colorsys"  # a small standard-library module this test suite does not import otherwise
    sys.modules.pop(name, None)
    thread = import_in_background(name)
    assert thread is not None and thread.daemon
    thread.join(timeout=60)
    assert name in sys.modules
    assert import_in_background(name) is None  # already imported (and already started): nothing to do


def test_a_failing_import_does_not_raise():
    thread = import_in_background("no_such_module_for_the_warmup_test")
    assert thread is not None
    thread.join(timeout=60)
    assert "no_such_module_for_the_warmup_test" not in sys.modules


def test_the_import_waits_for_its_delay():
    name = "tabnanny"  # a small standard-library module the suite does not import otherwise
    sys.modules.pop(name, None)
    thread = import_in_background(name, delay_s=30.0)
    thread.join(timeout=0.5)
    assert thread.is_alive() and name not in sys.modules  # still waiting, nothing imported yet


ROOT = Path(__file__).resolve().parents[2]


def test_streamlit_run_serves_the_router_as_an_app_with_a_light_import():
    """`streamlit run streamlit_app.py` finds `app` and imports the file to serve it. That import must not run the
    router or import the first page's libraries itself: the lifespan imports them while the browser loads."""
    found = discover_asgi_app(ROOT / "streamlit_app.py")
    assert found.is_asgi_app and found.import_string == "streamlit_app:app"
    probe = ("import sys, streamlit as st, streamlit_app as m; print(isinstance(m.app, st.App), "
             "m.app.script_path.name, 'altair' in sys.modules, 'pandas' in sys.modules)")
    assert fresh_python(probe).split() == ["True", "streamlit_app.py", "False", "False"]


def test_the_lifespan_starts_the_first_page_imports_and_returns_at_once(monkeypatch):
    imported = []
    monkeypatch.setattr(warmup, "import_in_background", lambda *modules, **kw: imported.append(modules))
    monkeypatch.setattr(warmup, "collect_less_often", lambda: imported.append("collector paced"))
    monkeypatch.setattr(warmup, "native_pools_of_one", lambda: imported.append("pools sized"))
    monkeypatch.setattr(warmup, "keep_freed_memory", lambda: imported.append("freed memory kept"))
    monkeypatch.setattr(warmup, "announce_start", lambda: imported.append("announced"))

    async def serve() -> None:
        async with warmup.lifespan(None):
            imported.append("serving")

    with ThreadPoolExecutor(1) as pool:  # a thread of its own: an earlier test may leave an event loop running here
        pool.submit(asyncio.run, serve()).result(timeout=60)
    assert imported == ["announced", "collector paced", "pools sized", "freed memory kept", warmup.FIRST_PAGE_MODULES,
                        "serving"]


def test_the_warm_up_leaves_nothing_big_for_the_landing_page_to_import():
    """With `FIRST_PAGE_MODULES` imported, the landing page's first run (in a fresh process) imports none of our
    modules, none of the big libraries and neither of Streamlit's name lists: the warm-up list is complete."""
    probe = (
        "import sys, importlib, streamlit; from streamlit.testing.v1 import AppTest; from ui import warmup; "
        "[importlib.import_module(m) for m in warmup.FIRST_PAGE_MODULES]; before = set(sys.modules); "
        "AppTest.from_file('streamlit_app.py', default_timeout=120).run(); "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    out = fresh_python(probe)
    big = ("altair", "pandas", "pyarrow", "numpy", "jsonschema", "streamlit.emojis", "streamlit.material_icon_names")
    late = [m for m in out.split() if m.split(".")[0] in ("ui", "core") or m in big]
    assert late == []


def _probe(tmp_path: Path, body: str) -> list[str]:
    """Run `body` in a fresh process that can import two probe modules recording whether the collector was on
    while they were imported: ``gc_probe_quick``, and ``gc_probe_slow``, which waits for ``builtins.go_on``."""
    (tmp_path / "gc_probe_quick.py").write_text("import gc\nENABLED = gc.isenabled()\n")
    (tmp_path / "gc_probe_slow.py").write_text(
        "import builtins, gc\nbuiltins.go_on.wait(60)\nENABLED = gc.isenabled()\n")
    setup = (f"import builtins, gc, sys, threading, time\nsys.path.insert(0, {str(tmp_path)!r})\n"
             "builtins.go_on = threading.Event()\nfrom ui.warmup import import_in_background\n")
    return fresh_python(setup + textwrap.dedent(body)).split()


def test_the_collector_is_paused_while_the_warm_up_imports_then_what_it_loaded_is_frozen(tmp_path):
    assert _probe(tmp_path, """
        assert gc.isenabled()
        frozen = gc.get_freeze_count()  # 0 on a new 3.11 or 3.13 interpreter, 375 on 3.12.1
        import_in_background("gc_probe_quick").join(60)
        import gc_probe_quick
        print(gc_probe_quick.ENABLED, gc.isenabled(), gc.get_freeze_count() - frozen > 1000)
    """) == ["False", "True", "True"]


def test_overlapping_warm_ups_bring_the_collector_back_only_when_the_last_ends(tmp_path):
    assert _probe(tmp_path, """
        slow = import_in_background("gc_probe_slow")
        deadline = time.monotonic() + 30
        while "gc_probe_slow" not in sys.modules and time.monotonic() < deadline:  # its import has begun
            time.sleep(0.01)
        import_in_background("gc_probe_quick").join(60)
        during = gc.isenabled()
        builtins.go_on.set()
        slow.join(60)
        import gc_probe_slow
        print(during, gc_probe_slow.ENABLED, gc.isenabled())
    """) == ["False", "False", "True"]


def test_a_collector_turned_off_before_stays_off(tmp_path):
    assert _probe(tmp_path, """
        gc.disable()
        import_in_background("gc_probe_quick").join(60)
        print(gc.isenabled())
    """) == ["False"]


def test_the_server_collects_the_youngest_generation_less_often():
    """Only the youngest generation's threshold changes, and only when the server starts (not on import)."""
    out = fresh_python("import gc; default = gc.get_threshold(); from ui import warmup; before = gc.get_threshold(); "
                       "warmup.collect_less_often(); print(*default, *before, *gc.get_threshold())").split()
    default = out[:3]  # Python's own: (700, 10, 10) up to 3.12, (2000, 10, 10) on 3.13
    assert out[3:6] == default and out[6:] == [str(warmup.YOUNG_GENERATION_THRESHOLD), *default[1:]]


#: In a fresh process: NumPy loaded first (as Streamlit loads it before the server starts), then the pools sized,
#: then PyTorch imported (as the warm-up imports it later); the threads of each pool after that.
POOLS_PROBE = """
import os, sys
for name in {names}:
    os.environ.pop(name, None)
os.environ.update({operator})
import numpy
from threadpoolctl import threadpool_info
blas_before = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
from ui import warmup
warmup.native_pools_of_one()
import torch
pools = sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info())
print(blas_before, torch.get_num_threads(), pools)
"""


def pools_after_start(operator: dict[str, str]) -> tuple[int, int, list[tuple[str, int]]]:
    out = fresh_python(POOLS_PROBE.format(names=warmup.THREAD_POOL_ENV, operator=operator))
    before, torch_threads, pools = out.split(" ", 2)
    return int(before), int(torch_threads), ast.literal_eval(pools)


def test_the_server_runs_native_maths_on_each_run_s_own_thread():
    """NumPy's BLAS, loaded before start-up, and PyTorch's OpenMP pool, loaded after it, both have one thread."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("on one core every pool has one thread anyway: nothing to tell apart")
    blas_before, torch_threads, pools = pools_after_start({})
    assert blas_before > 1  # what the libraries take by themselves here
    assert torch_threads == 1 and pools and all(threads == 1 for _, threads in pools), pools


def test_an_operator_s_own_thread_counts_are_kept():
    blas_before, torch_threads, pools = pools_after_start({"OMP_NUM_THREADS": "2"})
    assert torch_threads == 2
    assert dict(pools).get("openblas", blas_before) == blas_before


@pytest.fixture(scope="module")
def served():
    """A server started and stopped: its log, and the shared objects its process had loaded while it served."""
    from devtools.appserver import AppServer

    with AppServer(env={"ATTENTION_DISABLE_EXEC": "1"}) as server:
        maps = Path(f"/proc/{server.proc.pid}/maps").read_text()
    return server.log, maps


def test_the_served_app_logs_what_it_got_at_start(served):
    """One line (`ui.deployment.announce_start`): the Python, the PyTorch build, whether "Check my code" can run."""
    import torch

    log, _ = served
    line = next(line for line in log.splitlines() if "serving on Python" in line)
    assert f"serving on Python {'.'.join(map(str, sys.version_info[:3]))}" in line
    assert f"PyTorch {torch.__version__}, {installed_build_words()}" in line
    assert '"Check my code" is OFF: switched off by ATTENTION_DISABLE_EXEC' in line


@pytest.mark.skipif(sys.platform != "linux", reason="reads the server's memory map from /proc")
def test_the_server_runs_on_uvloop_and_httptools(served):
    """requirements.txt installs them and uvicorn (Streamlit's server) takes them by itself: its event loop and its
    HTTP parser, in compiled code, are what every message and every file of the front end goes through."""
    _, maps = served
    assert re.search(r"/uvloop/loop\.[^/]*\.so", maps), "the server's event loop is asyncio's own"
    assert re.search(r"/httptools/parser/parser\.[^/]*\.so", maps), "the server parses HTTP in Python (h11)"


#: In a fresh process, a thread (as a script run) makes four arrays of 4 MB, writes them, frees them, twenty times:
#: the page faults of the last ten rounds, after the allocator has settled.
FAULTS_PROBE = """
import os, resource, threading
for name in {names}:
    os.environ.pop(name, None)
os.environ.update({operator})
import numpy as np
from ui import warmup
kept = warmup.keep_freed_memory() if {keep} else False
faults = []
def rounds():
    for i in range(20):
        if i == 10:
            faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt)
        arrays = [np.ones(1 << 20, dtype=np.float32) for _ in range(4)]
        del arrays
    faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt)
thread = threading.Thread(target=rounds)
thread.start()
thread.join()
print(kept, faults[1] - faults[0])
"""


def faults_after_start(keep: bool, operator: dict[str, str] | None = None) -> tuple[bool, int]:
    out = fresh_python(FAULTS_PROBE.format(names=warmup.MALLOC_ENV, operator=operator or {}, keep=keep)).split()
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, on Linux")
def test_the_server_s_threads_reuse_the_memory_they_free():
    """Ten rounds of four 4-MB arrays in a thread: by default each round's pages are given back and faulted in
    again; with the server's setting they are reused."""
    _, by_default = faults_after_start(keep=False)
    kept, after_start = faults_after_start(keep=True)
    assert by_default >= 10 * 1000  # every round faults in at least one array's 1,024 pages of 4 kB again
    assert kept and after_start < 100, after_start


def test_an_operator_s_own_allocator_settings_are_kept():
    kept, _ = faults_after_start(keep=True, operator={"MALLOC_TRIM_THRESHOLD_": "131072"})
    assert not kept
