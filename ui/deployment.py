"""What this deployment got: the Python, the PyTorch build, and whether "Check my code" can run here.

The server's start-up (`ui.warmup.lifespan`) logs it as one line on the logger ``attention``, so a lecturer can read
in Community Cloud's log what the build installed. Every fact is read without importing PyTorch (which the warm-up
imports in the background, seconds later): its build from the installed ``torch/version.py``, the GPU from the
driver's files, the sandbox's prerequisites from the kernel and libseccomp. Whether the sandbox really holds is
only known after its self-test (`exercise.sandbox.Sandbox.availability`), which runs at the first visit to the
exercise page and logs its own verdict.
"""

from __future__ import annotations

import ast
import ctypes.util
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from exercise.limits import DISABLE_SETTING, switched_off

#: The Pythons the app is tested on (the README's set-up, `.ci/run`, and what to pick on Community Cloud).
TESTED_PYTHONS = ((3, 11), (3, 12), (3, 13))
#: Files that exist on Linux when an NVIDIA driver (and so a GPU CUDA could use) is present.
NVIDIA_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidia0")


@dataclass(frozen=True)
class TorchBuild:
    """The installed PyTorch, from its ``version.py``: ``version`` is None when it is not installed."""

    version: str | None
    cuda: str | None = None


def torch_build() -> TorchBuild:
    """The installed PyTorch's version and CUDA version (``torch.version.cuda``), without importing it."""
    spec = importlib.util.find_spec("torch")  # a top-level package's spec: found, not imported
    if spec is None or not spec.submodule_search_locations:
        return TorchBuild(None)
    return read_torch_version(Path(spec.submodule_search_locations[0]) / "version.py")


def read_torch_version(path: Path) -> TorchBuild:
    """``__version__`` and ``cuda`` as assigned in PyTorch's generated ``torch/version.py``."""
    values: dict[str, object] = {}
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            try:
                values[target.id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return TorchBuild(str(values.get("__version__", "unknown")), values.get("cuda") or None)


def nvidia_gpu_present(files: tuple[str, ...] = NVIDIA_DRIVER_FILES) -> bool:
    return any(os.path.exists(f) for f in files)


def describe_torch(build: TorchBuild, gpu: bool) -> str:
    """The PyTorch build in words; a CUDA build on a machine without a GPU says what probably happened."""
    if build.version is None:
        return "PyTorch is NOT installed (every page but the first needs it)"
    if build.cuda is None:
        return f"PyTorch {build.version}, a CPU build"
    if gpu:
        return f"PyTorch {build.version}, a CUDA {build.cuda} build"
    return (f"PyTorch {build.version}, a CUDA {build.cuda} build on a machine without an NVIDIA GPU: PyTorch's CPU "
            "index was probably unreachable during the build and PyPI's CUDA build was installed instead (it works, "
            "but costs gigabytes of disk and memory; build again: push a change to requirements.txt, or redeploy)")


def execution_disabled() -> bool:
    """True when the environment variable or the secret `DISABLE_SETTING` says so (either one wins)."""
    values = [os.environ.get(DISABLE_SETTING)]
    try:
        if st.secrets.load_if_toml_exists():
            values.append(st.secrets.get(DISABLE_SETTING))
    except Exception:  # noqa: BLE001 - a malformed secrets file must not take the page down
        values.append("1")  # fail closed: if the setting cannot be read, do not run code
    return any(switched_off(v) for v in values)


def kernel_has_seccomp(status: Path = Path("/proc/self/status")) -> bool:
    """Whether the kernel offers seccomp (its ``Seccomp:`` line in the process's status)."""
    try:
        return any(line.startswith("Seccomp:") for line in status.read_text().splitlines())
    except OSError:
        return False


def sandbox_prerequisite_missing(platform: str = sys.platform) -> str | None:
    """Why the sandbox cannot work here, read without starting it; None when its self-test should decide."""
    if not platform.startswith("linux"):
        return f"the sandbox needs Linux's seccomp, and this is {platform}"
    if not kernel_has_seccomp():
        return "this kernel offers no seccomp filter"
    if ctypes.util.find_library("seccomp") is None:
        return "libseccomp is not installed (Debian's libseccomp2, listed in packages.txt)"
    return None


def describe_check_my_code(disabled: bool, missing: str | None) -> str:
    if disabled:
        return f'"Check my code" is OFF: switched off by {DISABLE_SETTING}'
    if missing is not None:
        return f'"Check my code" is OFF: {missing}'
    return ('"Check my code" is on if the sandbox\'s self-test passes (it runs at the first visit to the exercise '
            "page and logs its verdict)")


def start_line(version: tuple[int, ...], build: TorchBuild, gpu: bool, disabled: bool, missing: str | None) -> str:
    running = ".".join(str(n) for n in version)
    return (f"Attention, interactively: serving on Python {running} ({sys.executable}); "
            f"{describe_torch(build, gpu)}; {describe_check_my_code(disabled, missing)}.")


def announce_start(version: tuple[int, ...] | None = None) -> str:
    """Log what this deployment got, as one line; warn, without refusing, when the Python is not the tested one.

    Returns the line. `version` stands in for ``sys.version_info`` in tests.
    """
    from streamlit.logger import get_logger

    log = get_logger("attention")
    version = tuple(sys.version_info[:3]) if version is None else tuple(version)
    line = start_line(version, torch_build(), nvidia_gpu_present(), execution_disabled(),
                      sandbox_prerequisite_missing())
    log.info(line)
    warning = python_warning(version)
    if warning:
        log.warning(warning)
    return line


def python_warning(version: tuple[int, ...]) -> str | None:
    """The warning for a Python outside `TESTED_PYTHONS`, or None."""
    if tuple(version[:2]) in TESTED_PYTHONS:
        return None
    tested = " to ".join(".".join(map(str, v)) for v in (TESTED_PYTHONS[0], TESTED_PYTHONS[-1]))
    running = ".".join(str(n) for n in version)
    return (f"This app is tested on Python {tested}, and this server runs Python {running}. It may work, "
            f"but pick one of those where you can (on Streamlit Community Cloud: Advanced settings, when "
            "deploying; see the README's Deploy section).")
