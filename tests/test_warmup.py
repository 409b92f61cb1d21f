"""`ui.warmup`: slow imports started in the background, once."""

import sys

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
