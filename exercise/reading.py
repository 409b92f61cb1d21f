"""What a submission's source says, read without running it: the lines a diagnosis points the student to.

`read_source` parses the source (it never executes it) and lists, each with its line number and text:

* ``unassigned``: statements that call ``masked_fill`` and throw the result away. ``masked_fill`` returns a new
  tensor and leaves its input as it was (``masked_fill_`` is the in-place one), so such a line changes nothing;
* ``softmax``: the lines that call a softmax (``F.softmax``, ``torch.softmax``, ``x.softmax``, ``self.softmax``);
* ``is_causal``: the lines that pass ``is_causal=`` to a call;
* ``fills``: the lines that fill scores (``masked_fill``, ``masked_fill_``, ``torch.where``);
* ``dropout``: the lines that call something named like dropout (``F.dropout``, ``nn.Dropout``, ``self.attn_drop``);
* ``squash``: the lines that call a bounded function (``tanh``, ``sigmoid``, ``clamp``, ...), with its name;
* ``constants``: names given a number (``d_model = 512``), with the name and the number;
* ``unread``: the parameters of ``scaled_dot_product_attention`` its body never reads, with their name and position
  (the line is the ``def``'s).

It runs next to the student's code (`exercise.runner.run_source` calls it before executing the source), so
the parent treats what it reports as untrusted data (`exercise.results.decode_reading`). Standard library only.
"""

from __future__ import annotations

import ast
from typing import Any

#: Longest text kept for one line or one call, in characters.
MAX_TEXT = 160
#: Most lines kept of each kind.
MAX_LINES = 8
#: The out-of-place method whose result must be assigned.
OUT_OF_PLACE = "masked_fill"
#: The function the exercise asks for (`exercise.runner.FUNCTION_NAME`).
FUNCTION = "scaled_dot_product_attention"
#: Bounded functions a score can be passed through: each turns -inf into a finite number.
SQUASHES = ("tanh", "sigmoid", "clamp", "clip", "hardtanh", "softsign", "relu")
KINDS = ("unassigned", "softmax", "is_causal", "dropout", "squash", "constants", "unread", "fills")
#: Calls that fill scores where a mask says.
FILLS = ("masked_fill", "masked_fill_", "where")


def _called_name(call: ast.Call) -> str | None:
    """The name a call calls: ``softmax`` for ``F.softmax(x)``, ``x.softmax()`` and ``softmax(x)``."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


def _unassigned(node: ast.Expr, source: str) -> dict[str, Any] | None:
    """A statement that is only a call of ``masked_fill``: the line, the tensor it was called on, the call."""
    call = node.value
    if not isinstance(call, ast.Call) or _called_name(call) != OUT_OF_PLACE:
        return None
    if isinstance(call.func, ast.Attribute) and not (isinstance(call.func.value, ast.Name)
                                                     and call.func.value.id == "torch"):
        target = call.func.value  # scores.masked_fill(...)
    elif call.args:
        target = call.args[0]  # torch.masked_fill(scores, ...)
    else:
        return None
    return {"line": node.lineno, "tensor": ast.get_source_segment(source, target) or "",
            "call": ast.get_source_segment(source, call) or ""}


def _constant(node: ast.AST) -> dict[str, Any] | None:
    """``d_model = 512`` (or ``D: int = 512``): the line, the name and the number."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    else:
        return None
    if not isinstance(target, ast.Name) or not isinstance(value, ast.Constant):
        return None
    number = value.value
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        return None
    return {"line": node.lineno, "name": target.id, "value": float(number)}


def _unread(fn: ast.FunctionDef) -> list[dict[str, Any]]:
    """The parameters of `fn` that no expression in its body reads: name, position, and the ``def``'s line."""
    read = {n.id for statement in fn.body for n in ast.walk(statement)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    params = fn.args.posonlyargs + fn.args.args
    return [{"line": fn.lineno, "name": a.arg, "value": float(i)} for i, a in enumerate(params) if a.arg not in read]


def read_source(source: str) -> dict[str, list[dict[str, Any]]]:
    """The lines of `source` worth pointing at (see the module's docstring); empty lists if it does not parse."""
    found: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return found
    lines = source.splitlines()

    def keep(kind: str, entry: dict[str, Any]) -> None:
        if len(found[kind]) < MAX_LINES and all(e["line"] != entry["line"] or e.get("name") != entry.get("name")
                                                for e in found[kind]):
            entry["text"] = lines[entry["line"] - 1].strip() if entry["line"] <= len(lines) else ""
            found[kind].append({k: v[:MAX_TEXT] if isinstance(v, str) else v for k, v in entry.items()})

    for node in ast.walk(tree):
        if isinstance(node, ast.Expr):
            unassigned = _unassigned(node, source)
            if unassigned is not None:
                keep("unassigned", unassigned)
        if isinstance(node, ast.Call):
            if _called_name(node) == "softmax":
                keep("softmax", {"line": node.lineno})
            if any(k.arg == "is_causal" for k in node.keywords):
                keep("is_causal", {"line": node.lineno})
            name = _called_name(node) or ""
            if "drop" in name.lower():
                keep("dropout", {"line": node.lineno})
            if name in FILLS:
                keep("fills", {"line": node.lineno})
            if name in SQUASHES:
                keep("squash", {"line": node.lineno, "name": name})
        constant = _constant(node)
        if constant is not None:
            keep("constants", constant)
        if isinstance(node, ast.FunctionDef) and node.name == FUNCTION:
            for entry in _unread(node):
                keep("unread", entry)
    for kind in found:
        found[kind].sort(key=lambda e: e["line"])
    return found
