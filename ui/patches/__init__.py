"""Every patch of another library's private code, in one guarded place; `install()` applies them, once per process.

A patch replaces functions inside a library that the library does not offer for replacement (Altair's private
helpers, Streamlit's config lookup). Each is written and reviewed for one exact version of its library: the pin in
requirements.txt, recorded here in `Patch.version` and, for every pinned library the app leans on, in `REVIEWED`
(a test fails when requirements.txt pins another version, so an upgrade comes with a review of these modules).
On any other installed version, or when a target is missing, a patch leaves the library as it is and writes one
line to the ``attention`` log; the app then runs on the library's own code, only slower.

Not patches, and kept where they belong: public set-up (Altair's ``disable_debug_mode``, the ``inline_rows`` data
transformer registered through ``alt.data_transformers``: `ui.display.prepare_altair`), and the collector's pace
and warm-up imports (`ui.warmup`: ``gc`` is Python's public API; a warm-up import that fails is skipped).

``ATTENTION_DISABLE_PATCHES`` (comma-separated names, or ``all``) switches patches off for a process: what
benchmarks use to measure what each one buys (docs/performance.md).

The router calls `install()` at the start of every run (so the server and `AppTest` runs get the same patches);
only the first call does anything.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: Where a patch reports that it did not apply (the app's own logger).
log = logging.getLogger("attention")

#: The environment variable naming the patches to leave out (comma-separated, or ``all``).
DISABLE_VARIABLE = "ATTENTION_DISABLE_PATCHES"

#: The pinned libraries the patches (and the code around them) were last reviewed against: requirements.txt's pins.
REVIEWED: Mapping[str, str] = {
    "altair": "6.3.0",
    "streamlit": "1.67.0",
    "pandas": "3.1.1",
    "pyarrow": "26.0.1",
    "numpy": "2.4.6",
}


@dataclass(frozen=True)
class Patch:
    """Replacements for attributes of one module of one library, written for one version of it."""

    name: str  # what ``ATTENTION_DISABLE_PATCHES`` names
    library: str  # the distribution, as pip knows it
    version: str  # the one version the patch was written and reviewed for
    module: str  # the module whose attributes it replaces
    replacements: Mapping[str, Callable[..., Any]]  # attribute -> our function
    requires: tuple[str, ...] = ()  # other attributes of the module the patch uses
    on_install: Callable[[ModuleType], None] | None = None  # run once, after the replacements are in place
    originals: dict[str, Any] = field(default_factory=dict, compare=False)  # the library's own, once installed

    def original(self, attribute: str) -> Any:
        """The library's own function this patch replaced (what a replacement falls back on)."""
        return self.originals[attribute]


def installed_version(library: str) -> str | None:
    """The installed version of `library` (None when it is not installed)."""
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return None


def apply(patch: Patch, version: str | None = None) -> str | None:
    """Install `patch` if its library is at its version and every target is there; else leave the library alone.

    Returns None when applied, else the reason (also logged, one line). `version` stands in for the installed one.
    """
    version = installed_version(patch.library) if version is None else version
    if version != patch.version:
        return _skipped(patch, f"{patch.library} {version} is installed, the patch was written for {patch.version}")
    try:
        module = importlib.import_module(patch.module)
    except ImportError as error:
        return _skipped(patch, f"cannot import {patch.module} ({error})")
    missing = [a for a in (*patch.replacements, *patch.requires) if not hasattr(module, a)]
    if missing:
        return _skipped(patch, f"{patch.module} has no {', '.join(missing)}")
    for attribute, replacement in patch.replacements.items():
        current = getattr(module, attribute)
        if current is not replacement:
            patch.originals[attribute] = current
            setattr(module, attribute, replacement)
    if patch.on_install is not None:
        patch.on_install(module)
    return None


def remove(patch: Patch) -> None:
    """Put the library's own functions back (tests, to compare)."""
    module = importlib.import_module(patch.module)
    for attribute, original in patch.originals.items():
        setattr(module, attribute, original)


def _skipped(patch: Patch, reason: str) -> str:
    log.warning("Library patch %r not applied, %s left as it is: %s. The app works, without this speed-up; "
                "review ui/patches/%s.py.", patch.name, patch.library, reason, patch.name)
    return reason


def names() -> list[str]:
    """Every patch's name."""
    return [p.name for p in PATCHES]


def switched_off(value: str | None = None) -> set[str]:
    """The patches ``ATTENTION_DISABLE_PATCHES`` (or `value`) names; an unknown name is logged and ignored."""
    value = os.environ.get(DISABLE_VARIABLE, "") if value is None else value
    wanted = {n.strip() for n in value.split(",") if n.strip()}
    if "all" in wanted:
        return set(names())
    unknown = wanted - set(names())
    if unknown:
        log.warning("%s names no patch %s (the patches: %s).", DISABLE_VARIABLE, ", ".join(sorted(unknown)),
                    ", ".join(names()))
    return wanted & set(names())


_lock = threading.Lock()
_outcome: dict[str, str] | None = None  # per patch: "applied", "switched off" or why not applied


def install() -> dict[str, str]:
    """Apply every patch not switched off, on the first call in this process; return what became of each."""
    global _outcome
    with _lock:
        if _outcome is None:
            off = switched_off()
            if off:
                log.info("Library patches switched off by %s: %s", DISABLE_VARIABLE, ", ".join(sorted(off)))
            _outcome = {p.name: "switched off" if p.name in off else (apply(p) or "applied") for p in PATCHES}
        return dict(_outcome)


@contextlib.contextmanager
def without_patches() -> Iterator[None]:
    """Every library's own code while the block runs (tests compare the app's output with and without the patches).

    `install()` does nothing meanwhile (it has run), so a run of the router inside the block stays unpatched.
    """
    outcome = install()
    applied = [p for p in PATCHES if outcome[p.name] == "applied"]
    with _lock:
        for patch in applied:
            remove(patch)
    try:
        yield
    finally:
        with _lock:
            for patch in applied:
                apply(patch)


# The patches, after `Patch` (each module defines its own). Importing them changes nothing in any library.
from ui.patches import altair_compose, altair_walks, streamlit_theme, streamlit_vega_json  # noqa: E402

#: Every patch, in the order `install` applies them.
PATCHES: tuple[Patch, ...] = (altair_walks.PATCH, altair_compose.PATCH, streamlit_theme.PATCH,
                              streamlit_vega_json.PATCH)
