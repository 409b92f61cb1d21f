"""`ui.warmup`: slow imports started in the background, once."""

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from streamlit.web.server.app_discovery import discover_asgi_app

from tests.fresh_process import fresh_python
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


ROOT = Path(__file__).resolve().parents[1]


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

    async def serve() -> None:
        async with warmup.lifespan(None):
            imported.append("serving")

    with ThreadPoolExecutor(1) as pool:  # a thread of its own: an earlier test may leave an event loop running here
        pool.submit(asyncio.run, serve()).result(timeout=60)
    assert imported == [warmup.FIRST_PAGE_MODULES, "serving"]


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
