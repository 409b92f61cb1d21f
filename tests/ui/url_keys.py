"""Which query keys a page reads, found in its source rather than by running it.

A key counts when the page binds a widget to it through a `ui.url_state` helper, passes ``bind="query-params"``,
or reads `st.query_params` itself. Reading the source finds controls that only appear in some states too (the
training page's checkpoint slider appears after training), which a run of the page would miss.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from pathlib import Path

from devtools.appserver import ROOT, router_pages

ROUTER = ROOT / "streamlit_app.py"
URL_STATE = ROOT / "ui" / "url_state.py"
PAGES = {p.name: p for p in router_pages()}


def _string(node: ast.AST | None, constants: Mapping[str, str]) -> str | None:
    """The string a node stands for: a literal, or a module-level name bound to one (``PERM_KEY``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _module_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` (and ``A, B = "x", "y"``) assignments."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values, strict=False):
                if isinstance(name, ast.Name) and (text := _string(value, {})) is not None:
                    out[name.id] = text
    return out


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _call_key(call: ast.Call, index: int, constants: Mapping[str, str]) -> str | None:
    """The ``key`` argument of a call, given as the `index`-th positional argument or as ``key=``."""
    for kw in call.keywords:
        if kw.arg == "key":
            return _string(kw.value, constants) or "<not a literal>"
    if index < len(call.args):
        return _string(call.args[index], constants) or "<not a literal>"
    return None


@functools.cache
def binders() -> tuple[dict[str, int], dict[str, frozenset[str]]]:
    """The helpers of ``ui.url_state`` that bind a widget to the URL.

    Returns ``{name: position of its key argument}`` for the helpers that register the key they are given
    (``_register(key)``), and ``{name: keys}`` for those that bind a fixed key (``seed_slider`` -> seed).
    """
    tree = ast.parse(URL_STATE.read_text())
    functions = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    by_key: dict[str, int] = {}
    for f in functions:
        params = [a.arg for a in f.args.args]
        registers = any(isinstance(n, ast.Call) and _callee(n) == "_register" for n in ast.walk(f))
        if registers and "key" in params:
            by_key[f.name] = params.index("key")
    fixed: dict[str, frozenset[str]] = {}
    for f in functions:
        keys = {_call_key(n, by_key[_callee(n)], {}) for n in ast.walk(f)
                if isinstance(n, ast.Call) and _callee(n) in by_key}
        keys = {k for k in keys if k and not k.startswith("<")}
        if keys and f.name not in by_key:
            fixed[f.name] = frozenset(keys)
    return by_key, fixed


@functools.cache
def url_keys(path: Path) -> frozenset[str]:
    """Every query key a script reads: through a ``ui.url_state`` binder, ``bind="query-params"``, or
    ``st.query_params`` directly (``st.query_params["X"]``, ``.get("tokens")``, ``"X" in st.query_params``).

    Read from the source, so controls that only appear in some states (the training page's checkpoint
    slider, after training) are found too.
    """
    tree = ast.parse(path.read_text())
    constants = _module_constants(tree)
    by_key, fixed = binders()

    def is_query_params(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "query_params"

    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in by_key:
                found.add(_call_key(node, by_key[name], constants))
            found |= fixed.get(name, frozenset())
            if any(kw.arg == "bind" and _string(kw.value, constants) == "query-params" for kw in node.keywords):
                found.add(_call_key(node, len(node.args), constants))
            if isinstance(node.func, ast.Attribute) and is_query_params(node.func.value) and node.args:
                found.add(_string(node.args[0], constants))
        elif isinstance(node, ast.Subscript) and is_query_params(node.value):
            found.add(_string(node.slice, constants))
        elif isinstance(node, ast.Compare) and any(is_query_params(c) for c in node.comparators):
            found.add(_string(node.left, constants))
    found.discard(None)
    return frozenset(k for k in found if k is not None)


def page_keys(page: str) -> frozenset[str]:
    """The query keys of a page: its own and the router's app-wide ones (presenter mode)."""
    return url_keys(ROOT / PAGES[page].file) | url_keys(ROUTER)

