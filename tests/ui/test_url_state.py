"""Every URL-bound control on every page survives a link: a valid value is shown and used, a bad one falls back.

A link is public API (slides and handouts carry them), so for every page of the router and every query key
it reads, two things are checked:

* **valid**: the page opened with a non-default value shows that value in its widget, computes with it (a
  number or chart changes to what `core` gives for that value, not to what it gives for the default), shows
  no notice, and the sidebar's link carries the value on;
* **malformed**: the page opened with a value it cannot use (``seed=abc``, ``heads=7`` with ``d_model=16``, a
  10,000-character sentence, an out-of-range number) raises nothing, the widget falls back to a valid value,
  the page computes with that value, and the page says so: the router's notice (``The link's value for `key`
  could not be used here ...``) or, for free text, the page's own error.

The keys of each page are read from its source (`url_keys`), so a new URL-bound control without a case here,
or without a pointer to the test that already covers it (`ELSEWHERE`), fails
`test_every_url_key_of_every_page_has_both_round_trips`. Each run also checks that every bound widget it
finds was seen by that reading.

One AppTest run per case. To keep the file fast, the independent keys of a page share one link per kind;
each key's widget, notice and link are still checked one by one, and each valid value must matter on its
own: what `core` gives with that key put back to its default differs from what the page must show.
"""

from __future__ import annotations

import ast
import functools
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import LESSON_TOKENS, LESSON_X, positional_encoding, worked_example
from core.attention import scaled_dot_product_attention
from core.embeddings import embed_tokens
from core.encoder_decoder import encoder_decoder_attention
from core.lookup import fruit_dictionary, soft_lookup
from core.scaling import random_qkv
from devtools.appserver import ROOT, router_pages
from tests.helpers.apptest import APP, TIMEOUT, chart_specs, heatmaps, markdown_tables, section_titles, share_link
from tests.pages.test_cross_attention import maps as cross_maps
from tests.pages.test_masked_attention import expected as masked_core
from tests.pages.test_masked_attention import step_panels
from tests.pages.test_multi_head import charts_by_role
from tests.pages.test_multi_head import expected as multi_head_expected
from tests.pages.test_permutation import panels as permutation_panels
from tests.pages.test_positional_encoding import wave_data
from tests.pages.test_pretrained import grid_rows
from tests.pages.test_training import checkpoint_maps
from training.config import TASKS, TrainConfig
from training.model import build_model, parameter_count
from training.tasks import held_out_size, parse_digits
from training.trainer import Trainer, predict
from ui.url_state import QUERY_KEYS

ROUTER = ROOT / "streamlit_app.py"
URL_STATE = ROOT / "ui" / "url_state.py"
PAGES = {p.name: p for p in router_pages()}
VALID, MALFORMED = "valid", "malformed"
#: The router's notice for a link value a page could not use (streamlit_app.py).
NOTICE = re.compile(r"The link's value for `(\w+)` could not be used here, "
                    r"so the page opened with `(.*)` instead\.", re.S)
PROJECTOR_FONTS = {"labelFontSize": 16, "titleFontSize": 18}  # ui.charts.for_projector: 11 and 12 × 1.5


# ------------------------------------------------------------------ which keys a page reads, from its source


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


# ------------------------------------------------------------------------------- running and reading a link


def bound_widgets(at: AppTest) -> dict[str, Any]:
    """Every widget on the page bound to the URL, by its query key (read from the widget's own message)."""
    found: dict[str, Any] = {}

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and "query_param_key" in getattr(proto.DESCRIPTOR, "fields_by_name", {}):
            if proto.query_param_key:
                found[proto.query_param_key] = node
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                walk(child)

    walk(at._tree)
    return found


def widget_value(widget: Any) -> Any:
    """What a bound widget shows: its value, or for an expander whether it is open."""
    return widget.proto.expanded if type(widget).__name__ == "Expander" else widget.value


def link_notices(at: AppTest) -> dict[str, str]:
    """The router's fallback notices: ``{key: the value shown instead}``."""
    return {m.group(1): m.group(2) for info in at.info if (m := NOTICE.fullmatch(info.value))}



def url_form(key: str, value: str | list[str]) -> str:
    return urllib.parse.urlencode({key: value}, doseq=True)


def same(a: Any, b: Any) -> bool:
    """Equality of nested tuples, lists and dicts of numbers, strings and arrays (arrays to 1e-9)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-9)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


# ------------------------------------------------------------- what each page computes from its parameters


@dataclass(frozen=True)
class Probe:
    """How to read a page's numbers (`shown`) and what `core` says they must be for given parameters."""

    defaults: Mapping[str, Any]
    shown: Callable[[AppTest], Any]
    expected: Callable[[Mapping[str, Any]], Any]


def metric_values(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


SHOP = fruit_dictionary()


def soft_lookup_expected(p: Mapping[str, Any]) -> dict[str, str]:
    soft, w = soft_lookup(SHOP.queries[p["query"]], SHOP.keys, SHOP.values, p["temp"])
    return {"soft result": f"{float(soft):.4f}", "largest soft weight": f"{float(w.max()):.4f}"}


STAGES = ["X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output"]


def worked_example_shown(at: AppTest) -> dict[str, Any]:
    # the "own input" data editor: sent only while its expander is open, which a link with its own input opens
    editors = [df.value for df in at.dataframe if df.proto.editing_mode]
    table = (tuple(editors[0]["token"]), editors[0].drop(columns="token").to_numpy(float)) if editors else None
    maps = heatmaps(at)
    torch_check = [float(m.value) for m in at.metric if m.label.startswith("max |NumPy − PyTorch|")]
    return {"own-input table": table, "X": maps["X"],
            "stages shown": len(section_titles(at)), "weights": maps.get("attention weights A"),
            "PyTorch agrees to float32": torch_check[0] < 1e-6 if torch_check else None}


def worked_example_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    stage = STAGES.index(p["reveal"])
    ex = worked_example(p["seed"], X=p["X"], tokens=p["tokens"])
    own = tuple(p["tokens"]) != LESSON_TOKENS or not np.array_equal(p["X"], LESSON_X)
    return {"own-input table": (tuple(p["tokens"]), np.asarray(p["X"], float)) if own else None, "X": p["X"],
            "stages shown": stage + 1 + (stage == len(STAGES) - 1),  # the last stage adds the PyTorch check
            "weights": ex.weights if stage >= STAGES.index("softmax") else None,
            "PyTorch agrees to float32": True if p["check"] and stage == len(STAGES) - 1 else None}


def scaled_expected(p: Mapping[str, Any]) -> dict[str, np.ndarray]:
    Q, K, V = random_qkv(p["seq_len"], p["d_k"], p["seed"])
    _, weights = scaled_dot_product_attention(Q, K, V, scale=None if p["scaled"] else 1.0)
    scores = Q @ K.T / (np.sqrt(p["d_k"]) if p["scaled"] else 1.0)
    return {"scores QKᵀ / √d_k" if p["scaled"] else "scores QKᵀ": scores, "attention weights": weights}


def permutation_shown(at: AppTest) -> dict[str, np.ndarray]:
    return {k: v for k, v in permutation_panels(at).items() if k in ("X", "PX", "X + PE", "PX + PE")}


def permutation_expected(p: Mapping[str, Any]) -> dict[str, np.ndarray]:
    tokens = p["text"].split()
    E = embed_tokens(tokens, 16, p["seed"])
    perm = [int(i) for i in p["perm"].split(",")]
    if not p["pe"]:
        return {"X": E, "PX": E[perm]}
    pe = positional_encoding(len(tokens), 16)  # each position keeps its encoding, whichever word moves there
    return {"X + PE": E + pe, "PX + PE": E[perm] + pe}


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n > 1 else ''}"


def positional_shown(at: AppTest) -> dict[str, Any]:
    tables = {k: v for k, v in heatmaps(at).items() if k.startswith("PE (")}
    curves, _ = wave_data(at)
    dims = sorted({int(re.match(r"dim (\d+) ", s).group(1)) for s in curves["series"]})
    return {"table": tables, "dims drawn": dims}


def positional_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    title = f"PE ({plural(p['positions'], 'position')} × {plural(p['d_model'], 'dim')})"
    return {"table": {title: positional_encoding(p["positions"], p["d_model"])}, "dims drawn": sorted(p["dims"])}


def masked_shown(at: AppTest) -> dict[str, np.ndarray]:
    (row,) = [df["weight"].to_numpy() for title, df in step_panels(at).items() if title.startswith("causal")]
    return {"weights": heatmaps(at)["attention weights A"], "masked row of the step": row}


def masked_page_expected(p: Mapping[str, Any]) -> dict[str, np.ndarray]:
    shown = masked_core(p["seq_len"], p["seed"], p["causal"]).weights
    masked = masked_core(p["seq_len"], p["seed"], True).weights
    return {"weights": shown, "masked row of the step": masked[p["step"] - 1]}


def cross_expected(p: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    r = encoder_decoder_attention(p["src"].split(), p["tgt"].split(), d_model=p["d_model"], seed=p["seed"])
    return r.encoder.weights, r.decoder.weights, r.cross.weights


def training_shown(at: AppTest) -> dict[str, Any]:
    """The untrained page's description of the configuration (its caption), parsed."""
    (text,) = [c.value for c in at.caption if c.value.startswith("**Task:")]
    example = re.search(r"e\.g\. ([\d ]+) →", text).group(1).split()
    return {"task": re.match(r"\*\*Task: (.*?)\*\*", text).group(1), "example length": len(example),
            "largest example digit": max(map(int, example)),
            "parameters": int(re.search(r"([\d,]+) trainable numbers", text).group(1).replace(",", "")),
            "d_k": int(re.search(r"d_k = (\d+)", text).group(1)),
            "held out": int(re.search(r"measured on ([\d,]+) held-out", text).group(1).replace(",", "")),
            "button": at.button(key="train").label}


def train_config(p: Mapping[str, Any]) -> TrainConfig:
    return TrainConfig(task=p["task"], seq_len=p["seq_len"], vocab=p["vocab"], d_model=p["d_model"],
                       n_heads=p["heads"], n_layers=p["layers"], pos=p["pos"], steps=p["steps"], lr=p["lr"],
                       seed=p["seed"])


EXAMPLE_DIGITS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]  # app_pages/training.py's illustration, shown mod vocab


def training_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    config = train_config(p)
    return {"task": TASKS[p["task"]], "example length": p["seq_len"],
            "largest example digit": max(d % p["vocab"] for d in EXAMPLE_DIGITS[:p["seq_len"]]),
            "parameters": parameter_count(build_model(config)), "d_k": p["d_model"] // p["heads"],
            "held out": held_out_size(config), "button": "Train"}


#: A short run, trained once for this module: a link with its settings must open on its results.
SHORT_RUN = dict(steps=50, seq_len=4, d_model=16, lr=0.01, seed=7)  # and the default vocabulary, 0 … 9
RUNS_KEY = "_training_runs"  # app_pages/training.py: this session's runs, {TrainConfig: Trainer}


@functools.cache
def short_run() -> Trainer:
    trainer = Trainer(train_config({**TRAINING_DEFAULTS, **SHORT_RUN}))
    trainer.run()
    return trainer


def trained_shown(at: AppTest) -> dict[str, Any]:
    if at.button(key="train").label != "Trained":
        return {"button": at.button(key="train").label}
    line = next(m.value for m in at.markdown if m.value.startswith("input `"))
    return {"button": "Trained", "maps at the checkpoint": checkpoint_maps(at), "your input": line.split(" · ")[0]}


def trained_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    trainer = short_run()
    if train_config(p) != trainer.config:
        return {"button": "Train"}  # no run with these settings in the session
    r = trainer.result
    c = r.checkpoint_steps.index(p["ckpt"])
    maps = {f"layer 1 · head {h + 1}": r.attention[c][0, h] for h in range(p["heads"])}
    x = parse_digits(p["digits"], p["vocab"], 12)[: p["seq_len"]]
    pred, _, _ = predict(r.model_at(c), x)
    return {"button": "Trained", "maps at the checkpoint": maps,
            "your input": f"input `{' '.join(map(str, x))}` → model `{' '.join(map(str, pred))}`"}


#: The WordPiece tokens of the texts used below (all-MiniLM-L6-v2 lower-cases; "." is a token of its own).
PRETRAINED_DEFAULT_TEXT = "The cat sat on the mat because it was tired."
WORDPIECES = {
    PRETRAINED_DEFAULT_TEXT: ("[CLS]", "the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired", ".",
                              "[SEP]"),
    "The dog ran home": ("[CLS]", "the", "dog", "ran", "home", "[SEP]"),
}


def pretrained_shown(at: AppTest) -> dict[str, Any]:
    chips = next(m.value for m in at.markdown if re.match(r"\*\*The \d+ tokens", m.value))
    (title,) = [t for t in heatmaps(at) if re.fullmatch(r"layer \d+, head \d+", t)]
    layer, head = map(int, re.findall(r"\d+", title))
    grid = grid_rows(at)
    cell = grid[(grid["layer"] == layer) & (grid["head"] == head)].sort_values(["i", "j"])["weight"].to_numpy()
    close_up = heatmaps(at)[title]
    return {"tokens": tuple(re.findall(r"`([^`]+)`", chips.split(":", 1)[1])), "close-up": title,
            "close-up is that head of the grid": bool(np.allclose(close_up.ravel(), cell, atol=1e-6))}


def pretrained_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"tokens": WORDPIECES[p["text"]], "close-up": f"layer {p['layer']}, head {p['head']}",
            "close-up is that head of the grid": True}


def cost_shown(at: AppTest) -> dict[str, Any]:
    table = markdown_tables(at)[0]
    (info,) = [i.value for i in at.info if "Press **Measure**" in i.value]
    return {"columns": [c for c in table.columns if c.startswith(("per layer", "all "))],
            "sizes measured": re.search(r"T = 64 … \d+", info).group(0),
            "one T × T matrix": at.metric[0].value, "naive PyTorch keeps": at.metric[1].value}


COST_ARCHS = {"all-MiniLM-L6-v2 (6 layers × 12 heads)": (6, 12), "Llama-2-7B (32 layers × 32 heads)": (32, 32)}


def cost_expected(p: Mapping[str, Any]) -> dict[str, Any]:
    n_layers, n_heads = COST_ARCHS[p["arch"]]
    T, d_k = p["max_len"], p["d_k"]
    return {"columns": [f"per layer (× {n_heads} heads)", f"all {n_layers} layers"],
            "sizes measured": f"T = 64 … {T}", "one T × T matrix": f"{T**2 * 4 / 2**20:.1f} MiB",
            # float32: three T × T matrices (scores, exp, weights) plus Q, K, V and the output
            "naive PyTorch keeps": f"{(3 * T**2 + 4 * T * d_k) * 4 / 2**20:.1f} MiB"}


TRAINING_DEFAULTS = dict(task="reverse", pos="sinusoidal", seq_len=8, vocab=10, d_model=32, heads=2, layers=1,
                         steps=400, lr=3e-3, seed=0)
PROBES: dict[str, Probe] = {
    "soft_lookup": Probe(dict(query="sweet", temp=0.2),
                         lambda at: {k: v for k, v in metric_values(at).items() if k in ("soft result",
                                                                                         "largest soft weight")},
                         soft_lookup_expected),
    "worked_example": Probe(dict(seed=0, reveal="output", check=False, tokens=LESSON_TOKENS, X=LESSON_X),
                            worked_example_shown, worked_example_expected),
    "scaled_attention": Probe(dict(seed=0, seq_len=8, d_k=64, scaled=True),
                              heatmaps, scaled_expected),
    "multi_head": Probe(dict(seed=0, d_model=16, heads=4, seq_len=6),
                        lambda at: charts_by_role(at)["maps"],
                        lambda p: multi_head_expected(p["seed"], p["d_model"], p["heads"], p["seq_len"]).weights),
    "permutation": Probe(dict(text="the cat sat on the mat", seed=0, perm="5,0,1,2,3,4", pe=False),
                         permutation_shown, permutation_expected),
    "positional_encoding": Probe(dict(positions=5, d_model=8, dims=[0, 1, 2, 4]), positional_shown,
                                 positional_expected),
    "masked_attention": Probe(dict(seed=0, seq_len=6, causal=True, step=4), masked_shown, masked_page_expected),
    "cross_attention": Probe(dict(src="the cat sat on the mat", tgt="le chat s'est assis", seed=0, d_model=16),
                             cross_maps, cross_expected),
    "exercise": Probe({}, lambda at: None, lambda p: None),  # no page control: only presenter mode (checked apart)
    "decoder": Probe({}, lambda at: None, lambda p: None),  # untrained: its numbers are tests/pages/test_decoder.py's
    "training": Probe(TRAINING_DEFAULTS, training_shown, training_expected),
    "pretrained": Probe(dict(text=PRETRAINED_DEFAULT_TEXT, layer=1, head=1), pretrained_shown, pretrained_expected),
    "attention_cost": Probe(dict(max_len=2048, d_k=64, arch=next(iter(COST_ARCHS))), cost_shown, cost_expected),
}
TRAINED = Probe({**TRAINING_DEFAULTS, "ckpt": 50, "digits": "3 1 4 1 5 9 2 6"}, trained_shown, trained_expected)

#: What presenter mode (``present``) hides on the pages that draw no chart until the student acts.
EXPLANATION_HIDDEN_IN_PRESENTER_MODE = {
    "exercise": "The lesson ends with an exercise",
    "training": "Every other page uses random W_q",
    "decoder": "The lesson ends with this",
}


def assert_presenter_mode(at: AppTest, page: str, on: bool) -> None:
    """Charts use the projector's fonts (ui.charts.for_projector), or a long explanation is hidden."""
    fonts = [{k: spec.get("config", {}).get("axis", {}).get(k) for k in PROJECTOR_FONTS} for spec, _ in chart_specs(at)]
    if page in EXPLANATION_HIDDEN_IN_PRESENTER_MODE:
        snippet = EXPLANATION_HIDDEN_IN_PRESENTER_MODE[page]
        assert snippet in (ROOT / PAGES[page].file).read_text()
        assert any(snippet in m.value for m in at.markdown) is not on
    else:
        assert fonts, "no chart on the page to show presenter mode"
        assert all((f == PROJECTOR_FONTS) is on for f in fonts), fonts


# ------------------------------------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    """One link, opened with one AppTest run.

    `widgets`: what each bound widget must show; `uses`: parameters of the page's `Probe` that are not
    widgets or that differ from what the widget shows (free text the page refused); `error`: for a
    malformed link, text of the page's own message, for input the widget accepts but the page cannot use
    (every other key must be named by the router's link notice); `covers`: the keys whose round trip this
    case checks (default: every key of the query).
    """

    page: str
    query: Mapping[str, str | list[str]]
    widgets: Mapping[str, Any] = field(default_factory=dict)
    uses: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    covers: tuple[str, ...] = ()
    probe: Probe | None = None
    session: Callable[[], dict[str, Any]] | None = None
    timeout: float = TIMEOUT
    id: str = ""

    @property
    def keys(self) -> tuple[str, ...]:
        return self.covers or tuple(self.query)

    def run(self) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=self.timeout)
        at.switch_page(PAGES[self.page].file)
        at.query_params.update(dict(self.query))
        for key, value in (self.session() if self.session else {}).items():
            at.session_state[key] = value
        return at.run()


def trained_session() -> dict[str, Any]:
    trainer = short_run()
    return {RUNS_KEY: {trainer.config: trainer}}


SHORT_LINK = {k: str(v) for k, v in SHORT_RUN.items()}
TEN_THOUSAND_CHARACTERS = "w " * 5000  # 5,000 words
MODEL_LOAD = 600  # seconds: the pretrained page loads its model on the first visit (slow on a busy machine)
LLAMA = "Llama-2-7B (32 layers × 32 heads)"

# One case per page and kind where the page's keys are independent (each widget, notice and number is
# still checked key by key); a separate case where one key's valid range depends on another's value.
VALID_CASES = [
    Case("soft_lookup", {"query": "sour", "temp": "1", "present": "true"},  # "1": the form the app writes for 1.0
         {"query": "sour", "temp": 1.0, "present": True}),
    # tokens and X are not widgets: the link fills the "own input" table (st.data_editor) and every matrix
    Case("worked_example", {"tokens": "a b c", "check": "true", "present": "true"}, {"check": True, "present": True},
         uses={"tokens": ("a", "b", "c")}),
    Case("worked_example", {"X": "1,0;0,1;1,1"}, uses={"X": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])}),
    Case("scaled_attention", {"seed": "7", "seq_len": "20", "d_k": "256", "scaled": "false", "present": "true"},
         {"seed": 7, "seq_len": 20, "d_k": 256, "scaled": False, "present": True}),
    Case("multi_head", {"present": "true"}, {"present": True}),
    # a new sentence brings its own default permutation, so text and perm are checked apart
    Case("permutation", {"text": "a b c", "present": "true"}, {"text": "a b c", "perm": "2,0,1", "present": True},
         covers=("text", "present")),
    Case("permutation", {"seed": "99", "perm": "1,0,2,3,4,5"}, {"seed": 99, "perm": "1,0,2,3,4,5"}),
    Case("positional_encoding", {"dims": ["3", "5"], "present": "true"}, {"dims": [3, 5], "present": True}),
    Case("masked_attention", {"seed": "99", "seq_len": "9", "causal": "false", "present": "true"},
         {"seed": 99, "seq_len": 9, "causal": False, "present": True}),
    Case("cross_attention", {"src": "the dog barked", "tgt": "le chien", "present": "true"},
         {"src": "the dog barked", "tgt": "le chien", "present": True}),
    Case("exercise", {"present": "true"}, {"present": True}),
    Case("decoder", dict(layers="1", heads="4", steps="1200", seed="5", present="true"),
         dict(layers=1, heads=4, steps=1200, seed=5, present=True)),
    # Before training, every setting shows in the description of the model; a link with a trained run's
    # settings opens on that run (so steps, lr and seed are used), at the linked checkpoint, on the linked digits.
    Case("training", dict(task="sort", pos="learned", seq_len="5", vocab="6", d_model="64", heads="8", layers="2",
                          present="true"),
         dict(task="sort", pos="learned", seq_len=5, vocab=6, d_model=64, heads=8, layers=2, present=True)),
    Case("training", {**SHORT_LINK, "ckpt": "20", "digits": "3 0 1 2"},
         {**SHORT_RUN, "ckpt": 20, "digits": "3 0 1 2"}, covers=("steps", "lr", "seed", "ckpt", "digits"),
         probe=TRAINED, session=trained_session, id="training-trained-run"),
    Case("pretrained", {"text": "The dog ran home", "layer": "3", "head": "7", "present": "true"},
         {"text": "The dog ran home", "layer": 3, "head": 7, "present": True}, timeout=MODEL_LOAD),
    Case("attention_cost", {"arch": LLAMA, "present": "true"}, {"arch": LLAMA, "present": True}),
]

MALFORMED_CASES = [
    Case("soft_lookup", {"query": "bitter", "temp": "0.03", "present": "maybe"},  # 0.03: between two stops
         {"query": "sweet", "temp": 0.2, "present": False}),
    Case("worked_example", {"reveal": "7", "check": "maybe", "present": "1"},  # 7: QUERY_KEYS' old numeric form
         {"reveal": "output", "check": False, "present": False}),
    Case("scaled_attention", {"seed": "abc", "seq_len": "99", "d_k": "3", "scaled": "perhaps", "present": "maybe"},
         {"seed": 0, "seq_len": 8, "d_k": 64, "scaled": True, "present": False}),
    Case("multi_head", {"seed": "-1", "d_model": "5", "seq_len": "1", "present": "maybe"},
         {"seed": 0, "d_model": 16, "heads": 4, "seq_len": 6, "present": False}, covers=("seed", "d_model", "seq_len",
                                                                                      "present")),
    Case("multi_head", {"d_model": "16", "heads": "7"}, {"d_model": 16, "heads": 4}, covers=("heads",)),
    Case("multi_head", {"d_model": "6", "heads": "4"}, {"d_model": 6, "heads": 3}, covers=("heads",),
         id="multi_head-heads-no-longer-divides"),
    Case("permutation", {"text": TEN_THOUSAND_CHARACTERS, "seed": "1.5e400", "pe": "sometimes", "present": "maybe"},
         {"text": TEN_THOUSAND_CHARACTERS, "seed": 0, "pe": False, "present": False},
         uses={"text": "the cat sat on the mat"}, error="5000 words is more than the 16"),
    Case("positional_encoding", {"positions": "0", "d_model": "513", "dims": "600", "present": "maybe"},
         {"positions": 5, "d_model": 8, "dims": [0, 1, 2, 4], "present": False}),
    Case("masked_attention", {"seed": "", "seq_len": "13", "causal": "yes", "step": "9", "present": "maybe"},
         {"seed": 0, "seq_len": 6, "causal": True, "step": 4, "present": False}),
    Case("masked_attention", {"seq_len": "3", "step": "5"}, {"seq_len": 3, "step": 3}, covers=("step",),
         id="masked_attention-step-beyond-the-sentence"),
    Case("cross_attention", {"seed": "100", "d_model": "17", "present": "maybe"},
         {"seed": 0, "d_model": 16, "present": False}),
    Case("exercise", {"present": "maybe"}, {"present": False}),
    Case("decoder", dict(layers="3", heads="3", steps="7", seed="abc", present="maybe"),
         dict(layers=2, heads=2, steps=500, seed=0, present=False)),
    Case("training", dict(task="dance", pos="rope", seq_len="2", vocab="11", d_model="48", heads="3", layers="3",
                          steps="7", lr="0.5", seed="abc", present="maybe"),
         {**TRAINING_DEFAULTS, "present": False}),
    Case("training", {**SHORT_LINK, "ckpt": "21"}, {**SHORT_RUN, "ckpt": 50}, covers=("ckpt",), probe=TRAINED,
         session=trained_session, id="training-ckpt-not-a-checkpoint"),
    Case("training", {**SHORT_LINK, "digits": TEN_THOUSAND_CHARACTERS},
         {**SHORT_RUN, "digits": TEN_THOUSAND_CHARACTERS}, uses={"digits": "3 1 4 1 5 9 2 6"},
         error="5000 words is more than the 12", covers=("digits",), probe=TRAINED, session=trained_session,
         id="training-digits-too-many"),
    # max_chars=200: Streamlit cuts the text to 200 characters (the notice), still too many tokens (the error)
    Case("pretrained", {"text": "a " * 2000, "layer": "7", "head": "0", "present": "maybe"},
         {"text": "a " * 100, "layer": 1, "head": 1, "present": False}, uses={"text": PRETRAINED_DEFAULT_TEXT},
         error="this page draws at most 32", timeout=MODEL_LOAD),
    Case("attention_cost", {"max_len": "3000", "d_k": "100", "arch": "GPT-9", "present": "maybe"},
         {"max_len": 2048, "d_k": 64, "arch": next(iter(COST_ARCHS)), "present": False}),
]

#: Round trips already checked elsewhere, as ``(page, key, kind): tests that together check them``.
DECODER_VALID = "tests/pages/test_decoder.py::test_every_writing_control_is_read_from_the_link_and_used"
DECODER_MALFORMED = "tests/pages/test_decoder.py::test_malformed_link_values_fall_back_with_a_notice"
ELSEWHERE: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("decoder", "prompt", VALID): (DECODER_VALID,),
    ("decoder", "prompt", MALFORMED): (
        "tests/pages/test_decoder.py::test_a_bad_prompt_gets_a_clear_message_and_the_last_good_prompt_is_kept",),
    ("decoder", "temp", VALID): (DECODER_VALID,),
    ("decoder", "temp", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "top_k", VALID): (DECODER_VALID,),
    ("decoder", "top_k", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "top_p", VALID): (DECODER_VALID,),
    ("decoder", "top_p", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "draw", VALID): (DECODER_VALID,),
    ("decoder", "draw", MALFORMED): (DECODER_MALFORMED,),
    ("decoder", "words", VALID): (DECODER_VALID,),
    ("decoder", "words", MALFORMED): (DECODER_MALFORMED,),
    ("worked_example", "seed", VALID): ("tests/test_streamlit_app.py::test_seed_from_the_url_is_restored",),
    ("worked_example", "seed", MALFORMED): (
        "tests/test_streamlit_app.py::test_malformed_seed_falls_back_to_the_default",
        "tests/pages/test_worked_example.py::test_malformed_controls_fall_back_with_a_visible_notice"),
    ("worked_example", "reveal", VALID): (
        "tests/pages/test_worked_example.py::test_every_control_round_trips_through_the_link",
        "tests/pages/test_worked_example.py::test_reveal_from_the_link_shows_only_the_first_stages"),
    ("worked_example", "token", VALID): (
        "tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",),
    ("worked_example", "token", MALFORMED): (
        "tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",
        "tests/pages/test_worked_example.py::test_malformed_controls_fall_back_with_a_visible_notice"),
    ("worked_example", "tokens", MALFORMED): (
        "tests/pages/test_worked_example.py::test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
    ("worked_example", "X", MALFORMED): (
        "tests/pages/test_worked_example.py::test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
    **{("multi_head", key, VALID): ("tests/pages/test_multi_head.py::test_slider_extremes",)
       for key in ("seed", "d_model", "heads", "seq_len")},
    ("permutation", "pe", VALID): ("tests/pages/test_permutation.py::test_positional_encoding_breaks_it",),
    ("permutation", "perm", MALFORMED): (
        "tests/pages/test_permutation.py::test_bad_permutations_show_an_error_and_fall_back",),
    **{("positional_encoding", key, VALID): ("tests/pages/test_positional_encoding.py::test_other_slider_extremes",)
       for key in ("positions", "d_model")},
    ("masked_attention", "step", VALID): (
        "tests/pages/test_masked_attention.py::test_longest_sentence_at_first_and_last_step",),
    **{("cross_attention", key, VALID): ("tests/pages/test_cross_attention.py::test_slider_extremes",)
       for key in ("seed", "d_model")},
    **{("cross_attention", key, MALFORMED): (
        "tests/pages/test_cross_attention.py::test_empty_sentence_in_the_url_shows_an_error",
        "tests/pages/test_cross_attention.py::test_too_many_tokens_shows_an_error") for key in ("src", "tgt")},
    **{("attention_cost", key, VALID): ("tests/pages/test_attention_cost.py::test_slider_extremes_render",)
       for key in ("max_len", "d_k")},
}


def case_id(case: Case) -> str:
    return case.id or f"{case.page}-{'+'.join(case.keys)}"


def covered() -> dict[tuple[str, str, str], str]:
    found = {(c.page, k, VALID): case_id(c) for c in VALID_CASES for k in c.keys}
    found |= {(c.page, k, MALFORMED): case_id(c) for c in MALFORMED_CASES for k in c.keys}
    return found | {k: " + ".join(refs) for k, refs in ELSEWHERE.items()}


# ------------------------------------------------------------------------------------------------ the tests


def test_keys_are_read_from_the_source_including_conditional_controls_and_raw_parameters():
    assert {"tokens", "X", "seed", "reveal", "token", "present"} <= page_keys("worked_example")
    assert {"ckpt", "digits"} <= page_keys("training")  # drawn only after training
    assert "perm" in page_keys("permutation")  # bound with key=PERM_KEY and bind="query-params"
    assert "present" in page_keys("exercise")  # the router's app-wide key
    for page in PAGES:
        assert page_keys(page) <= QUERY_KEYS.keys(), f"{page}: undocumented key"


def test_every_url_key_of_every_page_has_both_round_trips():
    done = covered()
    missing = [(page, key, kind) for page in PAGES for key in sorted(page_keys(page)) for kind in (VALID, MALFORMED)
               if (page, key, kind) not in done]
    assert not missing, f"URL keys without a round-trip test (add a Case here or a pointer in ELSEWHERE): {missing}"
    stale = [(c.page, k) for c in VALID_CASES + MALFORMED_CASES for k in c.keys if k not in page_keys(c.page)]
    stale += [(page, key) for page, key, _ in ELSEWHERE if key not in page_keys(page)]
    assert not stale, f"cases for keys the page no longer reads: {stale}"
    for refs in ELSEWHERE.values():
        for ref in refs:
            path, name = ref.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(), f"{ref} does not exist"


def open_and_check_widgets(case: Case) -> AppTest:
    at = case.run()
    assert not at.exception, at.exception
    widgets = bound_widgets(at)
    unseen = set(widgets) - page_keys(case.page)
    assert not unseen, f"widgets bound to the URL that url_keys() did not find in the source: {unseen}"
    shown = {key: widget_value(widgets[key]) for key in case.widgets}
    assert same(shown, dict(case.widgets)), shown
    return at


@pytest.mark.parametrize("case", VALID_CASES, ids=case_id)
def test_a_valid_value_in_the_link_is_shown_and_used(case):
    at = open_and_check_widgets(case)
    assert not link_notices(at) and not at.error
    link = share_link(at)
    for key, value in case.query.items():
        assert url_form(key, value) in link, (key, link)
    probe = case.probe or PROBES[case.page]
    params = {**probe.defaults, **case.widgets, **case.uses}
    assert same(probe.shown(at), probe.expected(params))
    for key in set(case.keys) & set(probe.defaults):  # each value changes what the page shows
        assert not same(probe.expected(params), probe.expected({**params, key: probe.defaults[key]})), key
    if "present" in case.keys:
        assert_presenter_mode(at, case.page, on=True)


@pytest.mark.parametrize("case", MALFORMED_CASES, ids=case_id)
def test_a_malformed_value_in_the_link_falls_back_with_a_notice(case):
    at = open_and_check_widgets(case)
    notices = link_notices(at)
    if case.error:
        messages = [e.value for e in at.error]
        assert any(case.error in m for m in messages), messages
    for key in case.keys:
        if case.error and key in case.uses:
            continue  # free text: the box keeps what was typed, the page's error says what it shows instead
        assert notices.get(key) == str(case.widgets[key]), (key, notices)
        assert url_form(key, case.query[key]) not in share_link(at)  # the link shared on is a valid one
    probe = case.probe or PROBES[case.page]
    params = {**probe.defaults, **case.widgets, **case.uses}
    assert same(probe.shown(at), probe.expected(params))
    if "present" in case.keys:
        assert_presenter_mode(at, case.page, on=False)


def test_a_single_value_of_a_multiselect_is_used_without_a_notice():
    case = Case("positional_encoding", {"dims": "3"}, {"dims": [3]})
    at = open_and_check_widgets(case)
    assert not link_notices(at)


def test_a_ten_thousand_character_word_is_refused():
    at = Case("permutation", {"text": "x" * 10_000}).run()
    assert not at.exception
    assert at.error and permutation_shown(at)["X"].shape == (6, 16)


@pytest.mark.parametrize(("query", "value"), [("1.0", 1.0), ("1", 1.0), ("5e-2", 0.05), ("0.0500", 0.05)])
def test_an_option_written_as_another_equal_number_is_used_without_a_notice(query, value):
    case = Case("soft_lookup", {"temp": query}, {"temp": value})
    at = open_and_check_widgets(case)
    assert not link_notices(at)
