"""The whole-block page, run headless: every stage is core's, the deep stack's sentences quote its numbers, the
FFN's shuffle, the PyTorch cross-check, the quiz, and the links to the pages that explain the other parts."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import core.transformer_block as block_maths
from core.block_reference import torch_block_outputs
from core.deep_stack import StackConfig, depth_sweep
from core.transformer_block import (
    LESSON_TOKENS,
    block_input,
    block_weights,
    feed_forward,
    transformer_block,
    weight_counts,
)
from core.worked_example import worked_example
from tests.helpers.apptest import heatmaps, markdown_tables, run_page, share_link
from tests.helpers.registry import Case, PageTests, Probe, Quiz
from ui.cache import clear_shared_caches

PAGE = "app_pages/transformer_block.py"
DEFAULTS = dict(seed=0, d_model=4, heads=1, act="ReLU", ln="post-LN (the paper)", layers=24, residual=True,
                norm=True, perm="2,0,1")
PLACEMENT = {"post-LN (the paper)": "post", "pre-LN (GPT-2)": "pre"}


def sweep_caption(at: AppTest) -> str:
    (caption,) = [c.value for c in at.caption if c.value.startswith("Stream ")]
    return caption


def shown(at: AppTest) -> dict[str, Any]:
    """The page's numbers: the block's stages (heatmaps), the sweep's sentence and caption, the shuffled FFN."""
    maps = heatmaps(at)
    pre = "x + MHA(LN₁(x))" in maps
    sub = "MHA(LN₁(x))" if pre else "MHA(x)"
    hidden = next(v for k, v in maps.items() if k.startswith("hidden"))
    (sentence,) = [m.value for m in at.markdown if re.match(r"\*\*\d+ blocks?,", m.value)]
    return {"residual_1": maps[f"x + {sub}"], "hidden": hidden, "output": maps["h + FFN" if pre else "LN₂: γ, β applied"],
            "sweep": sweep_caption(at), "sentence": sentence.split(".**")[0], "shuffled": maps["FFN(shuffled tokens)"]}


def expected(p: Mapping[str, Any]) -> dict[str, Any]:
    """What core says the page must show for the link's parameters `p` (the page's controls by key)."""
    p = {**DEFAULTS, "d_ff": 4 * p.get("d_model", DEFAULTS["d_model"]), **p}  # d_ff's default is 4 · d_model
    placement = PLACEMENT[p["ln"]]
    x, w = block_input(p["d_model"]), block_weights(p["seed"], p["d_model"], p["d_ff"])
    act = p["act"].lower()
    block = transformer_block(x, w, p["heads"], activation=act, placement=placement)
    sweep = depth_sweep(block_input(4), StackConfig(p["layers"], 1, 16, act, placement, p["residual"], p["norm"],
                                                    0))  # the stack: the lesson's width, a fixed seed
    perm = [int(i) for i in p["perm"].split(",")]
    return {"residual_1": block.residual_1, "hidden": block.ffn.hidden, "output": block.output,
            "sweep": f"Stream {sweep.stream[0]:.3g} at the input, {sweep.stream[-1]:.3g} at the top; gradient "
                     f"{sweep.grad_norm[0]:.3g} at block 1, {sweep.grad_norm[-1]:.3g} at block {p['layers']}.",
            "sentence": f"**{p['layers']} block{'s' if p['layers'] > 1 else ''}, residual "
                        f"{'on' if p['residual'] else 'off'}, norm {'on' if p['norm'] else 'off'}",
            "shuffled": feed_forward(x[perm], w, act).output}


def check(at: AppTest, **params: Any) -> None:
    assert not at.exception, [e.message for e in at.exception]
    found, want = shown(at), expected(params)
    for name in ("residual_1", "hidden", "output", "shuffled"):
        np.testing.assert_allclose(found[name], want[name], atol=1e-12, err_msg=name)
    assert found["sweep"] == want["sweep"]
    assert found["sentence"] == want["sentence"]


def test_defaults_start_from_the_lessons_three_tokens_and_the_worked_examples_attention():
    at = run_page(PAGE)
    check(at)
    assert at.title[0].value == "The whole Transformer block"
    maps = heatmaps(at)
    np.testing.assert_array_equal(maps["attention's input"], worked_example(0).X)
    np.testing.assert_allclose(maps["Concat(heads)"], worked_example(0).output, atol=1e-12)
    assert "the lesson's printed numbers" in section_one(at)
    assert "the lesson's printed numbers" not in section_one(run_page(PAGE, seed="1"))


def section_one(at: AppTest) -> str:
    """Section 1's Markdown: its heading, its text and the first half's stages."""
    (text,) = [m.value for m in at.markdown if m.value.startswith("## 1 · ")]
    return text


@pytest.mark.parametrize("params", [
    dict(seed=7, d_model=8, heads=2, d_ff=64, act="GELU", ln="pre-LN (GPT-2)", layers=3, residual=False, norm=True,
         perm="1,2,0"),
    dict(seed=99, d_model=32, heads=32, d_ff=256, act="ReLU", ln="post-LN (the paper)", layers=24, residual=True,
         norm=False, perm="0,1,2"),  # the heaviest setting
    dict(seed=1, d_model=12, heads=3, d_ff=12, act="GELU", ln="post-LN (the paper)", layers=1, residual=False,
         norm=False, perm="2,1,0"),
])
def test_every_setting_shows_cores_numbers(params):
    at = run_page(PAGE, **{k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()})
    check(at, **params)


def test_the_sweeps_sentence_quotes_its_numbers_and_the_residual_switch_makes_the_gradient_vanish():
    at = run_page(PAGE)
    on = depth_sweep(block_input(4), StackConfig(24, 1, 16))
    sentence = next(m.value for m in at.markdown if m.value.startswith("**24 blocks"))
    assert f"The gradient reaching block 1 is **{on.grad_norm[0]:.3g}**" in sentence
    at.toggle(key="residual").set_value(False).run()
    check(at, residual=False)
    off = depth_sweep(block_input(4), StackConfig(24, 1, 16, residual=False))
    sentence = next(m.value for m in at.markdown if m.value.startswith("**24 blocks"))
    assert f"The gradient reaching block 1 is **{off.grad_norm[0]:.3g}**" in sentence
    assert off.grad_norm[0] < 1e-3 * on.grad_norm[0]
    assert any(c.value.startswith("Without the residual") for c in at.caption)


def test_a_slider_step_recomputes_the_block():
    at = run_page(PAGE)
    at.select_slider(key="d_model").set_value(16).run()
    assert at.select_slider(key="d_ff").value == 64  # 4 · d_model by default
    check(at, d_model=16, d_ff=64)
    at.select_slider(key="heads").set_value(4).run()
    at.radio(key="ln").set_value("pre-LN (GPT-2)").run()
    check(at, d_model=16, d_ff=64, heads=4, ln="pre-LN (GPT-2)")


def test_a_step_of_d_ff_or_the_activation_builds_the_first_half_no_more(monkeypatch):
    import ui.charts.transformer_block as block_charts
    built = []
    half_spec = block_charts.half_spec
    monkeypatch.setattr(block_charts, "half_spec", lambda block, k, *args: built.append(k) or half_spec(block, k, *args))
    at = run_page(PAGE, seed=7, d_model=8, heads=2, d_ff=16)
    at.select_slider(key="d_ff").set_value(64).run()
    at.radio(key="act").set_value("GELU").run()
    assert not at.exception and built.count(1) >= 2 and built.count(0) <= 1  # the first run's, if not cached


def test_the_cross_check_and_the_shuffle_are_shown_as_numbers():
    at = run_page(PAGE, act="GELU", ln="pre-LN (GPT-2)", d_model=8, heads=2, d_ff=32)
    metrics = {m.label: float(m.value) for m in at.metric}
    x, w = block_input(8), block_weights(0, 8, 32)
    theirs = torch_block_outputs(x, w, 2, activation="gelu", placement="pre", causal=(False, True))  # one batch
    for label, causal, torch_output in zip(("no mask", "causal mask"), (False, True), theirs, strict=True):
        ours = transformer_block(x, w, 2, activation="gelu", placement="pre", causal=causal).output
        diff = np.abs(ours - torch_output).max()
        assert metrics[f"max |NumPy − PyTorch|, {label}"] == float(f"{diff:.1e}") and diff < 1e-12
    assert metrics["max |FFN(P x) − P FFN(x)|"] == 0.0


def test_the_weight_counts_are_computed_at_the_pages_sizes_and_gpt2s():
    at = run_page(PAGE, d_model=8, d_ff=32)
    (table,) = [t for t in markdown_tables(at) if "FFN's share" in t.columns]
    page, gpt2 = weight_counts(8, 32), weight_counts(768, 3072)
    assert table["attention 4·d_model²"].tolist() == [f"{page.attention:,}", f"{gpt2.attention:,}"]
    assert table["FFN 2·d_model·d_ff"].tolist() == [f"{page.ffn:,}", f"{gpt2.ffn:,}"]
    assert table["FFN's share"].tolist() == [f"{page.ffn_share:.1%}", "66.7%"]


def test_the_norms_caption_quotes_the_normalised_rows():
    at = run_page(PAGE)
    block = transformer_block(block_input(4), block_weights(0, 4, 16), 1)
    z = block.norm_1.normalised
    caption = next(c.value for c in at.caption if "Before γ and β" in c.value)
    assert f"variance {z.var(axis=1).min():.5f} to {z.var(axis=1).max():.5f}" in caption
    assert ", ".join(f"{v:.3f}" for v in block.norm_1.var) in caption


def test_the_quiz_answer_is_computed_from_the_sweep():
    for residual, answer in ((False, "it is over 10 times smaller"), (True, None)):
        at = run_page(PAGE, residual=str(residual).lower())
        sweep = depth_sweep(block_input(4), StackConfig(24, 1, 16, residual=residual))
        ratio = sweep.grad_norm[0] / sweep.grad_norm[-1]
        want = ("it is over 10 times smaller" if ratio < 0.1 else "it is over 10 times larger" if ratio > 10
                else "about the same (within 10 times)")
        assert answer in (None, want)
        quiz = at.radio(key="quiz_transformer_block_gradient_choice")
        quiz.set_value(want).run()
        at.button(key="quiz_transformer_block_gradient_reveal").click().run()
        assert any(s.value.startswith(f"Right: **{want}**") for s in at.success)


def test_the_diagram_links_every_page_it_names():
    at = run_page(PAGE)
    links = {link.proto.label: link.proto.page for link in at.get("page_link")}
    assert {label: links[label] for label in (
        "Tokens and their attention: the worked example", "Embedding + positional encoding", "Multi-head attention",
        "Output probabilities: a decoder that writes")} == {
        "Tokens and their attention: the worked example": "", "Embedding + positional encoding": "positional_encoding",
        "Multi-head attention": "multi_head", "Output probabilities: a decoder that writes": "decoder"}


def in_order(node) -> list:
    """Every element under `node`, in the order the page draws them."""
    found = []
    for child in getattr(node, "children", {}).values():
        found.append(child)
        found += in_order(child)
    return found


def test_the_picture_of_the_whole_model_is_at_the_top_above_the_controls():
    at = run_page(PAGE)
    drawn = in_order(at.main)
    heading = next(i for i, e in enumerate(drawn) if e.type == "markdown" and e.value.startswith("## "))
    assert drawn[heading].value.startswith("## 0 · Where attention lives")
    assert drawn[heading + 1].type == "vega_lite_chart"  # the picture right under its heading
    first_control = next(i for i, e in enumerate(drawn) if e.type in ("slider", "select_slider"))
    assert heading < first_control


STAGE_HEADINGS = {"post": ["1.1 · Attention", "1.2 · Add: the residual stream", "1.3 · Norm",
                            "1.4 · Feed-forward network", "1.5 · Add again", "1.6 · Norm again"],
                   "pre": ["1.1 · Norm", "1.2 · Attention", "1.3 · Add: the residual stream", "1.4 · Norm again",
                           "1.5 · Feed-forward network", "1.6 · Add again"]}


@pytest.mark.parametrize("ln", list(PLACEMENT))
def test_the_sections_come_in_order_each_half_of_the_block_one_chart_under_its_stages_the_deep_stack_last(ln):
    at = run_page(PAGE, ln=ln)
    drawn = in_order(at.main)
    headings = [(i, line) for i, e in enumerate(drawn) if e.type == "markdown"
                for line in e.value.splitlines() if line.startswith(("## ", "### "))]
    assert [line for _, line in headings] == [
        "## 0 · Where attention lives", "## 1 · The lesson's three tokens through one block",
        *(f"### {h}" for h in STAGE_HEADINGS[PLACEMENT[ln]]), "## 2 · Post-LN or pre-LN",
        "## 3 · The feed-forward network works per position", "## 4 · Cross-check with PyTorch's own block",
        "## 5 · Why the residual, and why the norm: a deep stack"]
    halves = [i for i, line in headings if line.startswith("### 1.1") or line.startswith("### 1.4")]
    assert [drawn[i + 1].type for i in halves] == ["vega_lite_chart"] * 2  # each half's chart under its stages
    stack = headings[-1][0]
    quiz = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == "quiz_transformer_block_gradient_choice")
    assert stack < quiz


def test_presenter_mode_keeps_each_stages_heading_and_formula_and_leaves_its_text_to_the_lecturer():
    texts = {present: section_one(run_page(PAGE, present=present)) for present in ("false", "true")}
    for text in texts.values():
        assert "### 1.3 · Norm" in text and r"\frac{x - \mu}" in text
    assert "subtract its mean μ" in texts["false"] and "subtract its mean μ" not in texts["true"]


@pytest.mark.parametrize("ln", list(PLACEMENT))
def test_the_output_rows_sizes_are_both_placements_blocks(ln):
    at = run_page(PAGE, ln=ln, d_model="8", heads="2", seed="3")
    x, w = block_input(8), block_weights(3, 8, 32)
    post, pre = (np.linalg.norm(transformer_block(x, w, 2, placement=p).output, axis=1) for p in ("post", "pre"))
    caption = next(c.value for c in at.caption if c.value.startswith("The block's output rows are"))
    assert caption.startswith(f"The block's output rows are {', '.join(f'{v:.2f}' for v in post)} long with post-LN")
    assert f"√d_model = {np.sqrt(8):.2f} times γ), {', '.join(f'{v:.2f}' for v in pre)} with pre-LN" in caption
    assert caption.endswith("Section 5 shows what that does over many blocks.")


def test_both_placements_blocks_are_drawn_from_one_draw_of_the_weights(monkeypatch):
    """Section 2 reads the block under both placements: their weights are drawn once per seed and widths."""
    drawn = []
    draw = block_maths.block_weights
    monkeypatch.setattr(block_maths, "block_weights", lambda *a: drawn.append(a) or draw(*a))
    clear_shared_caches()
    try:
        at = run_page(PAGE, seed="11", d_model="8", heads="2")
    finally:
        clear_shared_caches()
    assert not at.exception
    assert drawn.count((11, 8, 32)) == 1


def test_the_shuffle_names_the_lessons_tokens_in_their_new_order():
    at = run_page(PAGE, perm="1,0,2")
    assert at.radio(key="perm").options == ["0,1,2", "0,2,1", "1,0,2", "1,2,0", "2,0,1", "2,1,0"]
    assert any(c.value.startswith("Shuffled: " + " ".join(LESSON_TOKENS[i] for i in (1, 0, 2)) + ". ")
               for c in at.caption)


@pytest.mark.parametrize("ln", list(PLACEMENT))
def test_every_formula_is_typeset_from_its_latex_whole(ln):
    """No backslash of a formula lost on the way (``\\frac`` read as a form feed would print as red source)."""
    at = run_page(PAGE, ln=ln)
    texts = [m.value for m in at.markdown] + [x.value for x in at.latex]
    assert not [t for t in texts if re.search(r"[\t\x07\x08\x0b\x0c]", t)]
    formulas = "".join(texts)
    for command in (r"\text{head}", r"\frac{x - \mu}", r"\varepsilon", r"\varphi", r"\beta"):
        assert command in formulas, command
    assert r"\blacktriangleleft\ \text{shown}" in formulas


@pytest.mark.parametrize("page", ["app_pages/decoder.py", "app_pages/training.py"])
def test_the_trained_models_pages_say_their_layers_are_this_block_and_link_here(page):
    at = run_page(page)
    assert not at.exception
    assert any(c.value.startswith("Each of its layers is the whole Transformer block, pre-LN, with ReLU")
               for c in at.caption)
    assert "transformer_block" in [link.proto.page for link in at.get("page_link")
                                   if link.proto.label == "The whole Transformer block"]


@pytest.mark.parametrize("query, heads", [({"d_model": "8", "heads": "2"}, 2), ({"d_model": "16", "heads": "4"}, 4)])
def test_the_link_keeps_the_heads_over_later_runs(query, heads):
    """A link leaves out a value equal to the widget's default, so the default does not follow the session: after a
    later run the copied link still opens the same number of heads."""
    at = run_page(PAGE, **query)
    at.run()
    assert not at.exception and at.select_slider(key="heads").value == heads
    reopened = run_page(PAGE, **dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(share_link(at)).query)))
    assert reopened.select_slider(key="heads").value == heads, share_link(at)


def test_a_head_count_the_new_d_model_does_not_divide_moves_to_the_nearest_divisor():
    at = run_page(PAGE, d_model="8", heads="8")
    at.select_slider(key="d_model").set_value(4).run()
    assert not at.exception and at.select_slider(key="heads").value == 4
    at.run()
    assert not at.exception and at.select_slider(key="heads").value == 4


# ------------------------------------------------------------------- what the shared tests know of this page

SHARED = PageTests(
    probe=Probe(DEFAULTS, shown, expected),
    valid=[
        Case("transformer_block", dict(seed="7", d_model="8", d_ff="64", act="GELU", ln="pre-LN (GPT-2)", layers="5",
                                       residual="false", norm="false", perm="1,2,0", present="true"),
             dict(seed=7, d_model=8, d_ff=64, act="GELU", ln="pre-LN (GPT-2)", layers=5, residual=False, norm=False,
                  perm="1,2,0", present=True)),
        Case("transformer_block", {"d_model": "12", "heads": "3"}, {"d_model": 12, "heads": 3, "d_ff": 48},
             covers=("heads",)),
    ],
    malformed=[
        Case("transformer_block", dict(seed="abc", d_model="5", d_ff="7", act="tanh", ln="middle", layers="25",
                                       residual="maybe", norm="2", perm="0,0,1", present="maybe"),
             dict(seed=0, d_model=4, d_ff=16, act="ReLU", ln="post-LN (the paper)", layers=24, residual=True,
                  norm=True, perm="2,0,1", present=False)),
        Case("transformer_block", {"d_model": "8", "heads": "3"}, {"d_model": 8, "heads": 1}, covers=("heads",)),
    ],
    data_step=("seed", (0, 1)),
    concept=True,
    quiz=Quiz("transformer_block_gradient", "it is over 10 times smaller", {"residual": "false"}),
)
