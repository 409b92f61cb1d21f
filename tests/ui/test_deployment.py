"""`ui.deployment`: the start-up's one line, saying what this deployment got."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.helpers.fresh_process import fresh_python
from tests.helpers.installed import installed_build_words
from ui import deployment
from ui.deployment import TorchBuild, read_torch_version, start_line

# The lines of a generated torch/version.py that the reading depends on (the CPU wheel's, with its CUDA variant).
VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
"""


@pytest.mark.parametrize(("version", "cuda", "expected"), [
    ("2.13.0+cpu", "None", TorchBuild("2.13.0+cpu", None)),
    ("2.13.0", "'12.8'", TorchBuild("2.13.0", "12.8")),
])
def test_the_build_is_read_from_version_py(tmp_path, version, cuda, expected):
    path = tmp_path / "version.py"
    path.write_text(VERSION_PY.format(version=version, cuda=cuda))
    assert read_torch_version(path) == expected


def test_the_installed_build_is_read_as_torch_itself_reports_it():
    import torch

    assert deployment.torch_build() == TorchBuild(torch.__version__, torch.version.cuda)


def test_reading_the_facts_imports_no_pytorch():
    """The line is logged on the server's event loop at start: PyTorch's import (seconds) stays in the warm-up."""
    out = fresh_python("import sys; from ui import deployment; deployment.announce_start(); "
                       "print('torch' in sys.modules, 'exercise.sandbox' in sys.modules)")
    assert out.split() == ["False", "False"]


def test_a_cpu_build_is_named():
    line = start_line((3, 11, 7), TorchBuild("2.13.0+cpu"), gpu=False, disabled=False, missing=None)
    assert line.startswith(f"Attention, interactively: serving on Python 3.11.7 ({sys.executable}); ")
    assert "PyTorch 2.13.0+cpu, a CPU build;" in line


def test_a_cuda_build_without_a_gpu_says_plainly_what_probably_happened():
    line = start_line((3, 11, 7), TorchBuild("2.13.0", "12.8"), gpu=False, disabled=False, missing=None)
    assert "a CUDA 12.8 build on a machine without an NVIDIA GPU" in line
    assert "PyPI's CUDA build was installed instead" in line
    with_gpu = start_line((3, 11, 7), TorchBuild("2.13.0", "12.8"), gpu=True, disabled=False, missing=None)
    assert "a CUDA 12.8 build;" in with_gpu and "without" not in with_gpu


def test_a_missing_pytorch_is_said():
    assert "PyTorch is NOT installed" in start_line((3, 11, 7), TorchBuild(None), False, False, None)


def test_the_gpu_is_seen_through_the_drivers_files(tmp_path):
    driver = tmp_path / "nvidia0"
    assert not deployment.nvidia_gpu_present((str(driver),))
    driver.touch()
    assert deployment.nvidia_gpu_present((str(tmp_path / "absent"), str(driver)))


@pytest.mark.parametrize(("disabled", "missing", "words"), [
    (True, None, '"Check my code" is OFF: switched off by ATTENTION_DISABLE_EXEC.'),
    (False, "libseccomp is not installed", '"Check my code" is OFF: libseccomp is not installed.'),
    (False, None, "\"Check my code\" is on if the sandbox's self-test passes"),
])
def test_check_my_code_says_whether_it_can_run_and_why_not(disabled, missing, words):
    assert words in start_line((3, 11, 7), TorchBuild("2.13.0+cpu"), False, disabled, missing)


def test_the_sandboxs_prerequisites_are_checked_without_starting_it(monkeypatch, tmp_path):
    assert "needs Linux's seccomp, and this is darwin" in deployment.sandbox_prerequisite_missing("darwin")
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nNoNewPrivs:\t0\n")
    assert not deployment.kernel_has_seccomp(status)
    status.write_text("Name:\tpython\nSeccomp:\t0\nSeccomp_filters:\t0\n")
    assert deployment.kernel_has_seccomp(status)
    assert deployment.sandbox_prerequisite_missing("linux") is None  # this machine runs the sandbox's tests
    monkeypatch.setattr(deployment.ctypes.util, "find_library", lambda name: None)
    assert "libseccomp is not installed" in deployment.sandbox_prerequisite_missing("linux")


def capture(caplog, call):
    log = logging.getLogger("attention")  # Streamlit's loggers do not propagate to the root's capture
    log.addHandler(caplog.handler)
    try:
        result = call()
    finally:
        log.removeHandler(caplog.handler)
    return result, [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "attention"]


def test_the_start_up_logs_one_line_and_warns_only_off_the_tested_pythons(caplog, monkeypatch):
    import torch

    monkeypatch.setenv("ATTENTION_DISABLE_EXEC", "1")
    line, records = capture(caplog, lambda: deployment.announce_start((3, 11, 7)))
    assert records == [("INFO", line)]
    assert (f"serving on Python 3.11.7 ({sys.executable}); PyTorch {torch.__version__}, {installed_build_words()}"
            in line)
    assert line.endswith('"Check my code" is OFF: switched off by ATTENTION_DISABLE_EXEC.')
    caplog.clear()
    for tested in ((3, 12, 1), (3, 13, 0)):
        _, records = capture(caplog, lambda v=tested: deployment.announce_start(v))
        assert [level for level, _ in records] == ["INFO"], tested
        caplog.clear()
    for untested in ((3, 10, 13), (3, 14, 0)):
        _, records = capture(caplog, lambda v=untested: deployment.announce_start(v))
        assert [level for level, _ in records] == ["INFO", "WARNING"], untested
        assert "tested on Python 3.11 to 3.13" in records[1][1] and ".".join(map(str, untested)) in records[1][1]
        caplog.clear()

