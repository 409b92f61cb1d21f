"""What each page shows for a link's parameters, and what `core` says it must show (`Probe`, `PROBES`).

`tests/ui/test_url_state.py` opens every page with links of its own values and compares the two.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest

from core import LESSON_TOKENS, LESSON_X, positional_encoding, worked_example
from core.designed_weights import designed_example
from core.attention import scaled_dot_product_attention
from core.embeddings import embed_tokens
from core.encoder_decoder import encoder_decoder_attention, shifted_right
from core.lookup import fruit_dictionary, soft_lookup
from core.scaling import random_qkv
from devtools.appserver import ROOT
from tests.helpers.apptest import chart_specs, heatmaps, markdown_tables, section_titles
from tests.pages.test_cross_attention import maps as cross_maps
from tests.pages.test_masked_attention import expected as masked_core
from tests.pages.test_masked_attention import step_panels
from tests.pages.test_multi_head import charts_by_role
from tests.pages.test_multi_head import expected as multi_head_expected
from tests.pages.test_permutation import panels as permutation_panels
from tests.pages.test_positional_encoding import wave_data
from tests.pages.test_pretrained import grid_rows
from tests.pages.test_training import checkpoint_maps
from tests.ui.url_keys import PAGES
from training.config import TASKS, TrainConfig
from training.model import build_model, parameter_count
from training.tasks import held_out_size, parse_digits
from training.trainer import Trainer, predict

PROJECTOR_FONTS = {"labelFontSize": 16, "titleFontSize": 18}  # ui.charts.for_projector: 11 and 12 × 1.5



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
    if p["weights"] == "designed":  # its own sentence and embeddings, and no own-input table
        ex = designed_example()
        own, X = False, ex.X
    else:
        ex = worked_example(p["seed"], X=p["X"], tokens=p["tokens"])
        own, X = tuple(p["tokens"]) != LESSON_TOKENS or not np.array_equal(p["X"], LESSON_X), p["X"]
    return {"own-input table": (tuple(p["tokens"]), np.asarray(p["X"], float)) if own else None, "X": X,
            # the last stage adds the PyTorch check; the designed weights, from the softmax on, what each query asks
            "stages shown": stage + 1 + (stage == len(STAGES) - 1)
            + (p["weights"] == "designed" and stage >= STAGES.index("softmax")),
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
    r = encoder_decoder_attention(p["src"].split(), shifted_right(p["tgt"].split()), d_model=p["d_model"],
                                  seed=p["seed"])
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


def trained_session() -> dict[str, Any]:
    """Session state holding the short run, as the training page keeps its runs."""
    trainer = short_run()
    return {RUNS_KEY: {trainer.config: trainer}}


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
    "worked_example": Probe(dict(seed=0, reveal="output", check=False, tokens=LESSON_TOKENS, X=LESSON_X,
                                 weights="random"),
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
    "training": "The lesson's pages use random W_q",
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

