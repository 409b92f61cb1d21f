"""The multi-head attention page, run headless: defaults, every slider extreme, heads that stop dividing d_model."""


import json

import urllib.parse

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.embeddings import embed_tokens, random_projections
from core.multihead_steps import divisors, multi_head_steps
from tests.helpers.apptest import APP, chart_specs, facet_arrays, run_page, share_link
from tests.helpers.clicks import click_point
from tests.helpers.exports import download, page_matrices, parse_csv, parse_latex, recorded_downloads
from tests.helpers.registry import VALID, Case, PageTests, Probe, Quiz
from ui.charts.heatmap import unique_labels

PAGE = "app_pages/multi_head.py"
SENTENCE = "the cat sat on the mat because it was tired and the dog ran off home".split()


def expected(seed: int, d_model: int, n_heads: int, seq_len: int):
    tokens = SENTENCE[:seq_len]
    return multi_head_steps(embed_tokens(tokens, d_model, seed), *random_projections(d_model, seed), n_heads)


def expected_exports(seed: int, d_model: int, n_heads: int, seq_len: int) -> dict[str, tuple[np.ndarray, list, list]]:
    """What the export menus must offer, computed by `core`: every matrix whole and every head's block of it."""
    steps = expected(seed, d_model, n_heads, seq_len)
    tokens, dims, d_k = unique_labels(SENTENCE[:seq_len]), [str(j) for j in range(d_model)], d_model // n_heads
    out = {f"attention weights · head {h + 1}": (steps.weights[h], tokens, tokens) for h in range(n_heads)}
    for name, m in (("Q", steps.q), ("K", steps.k), ("V", steps.v), ("Concat(heads)", steps.concat)):
        out[name] = (m, tokens, dims)
        for h in range(n_heads if n_heads > 1 else 0):
            lo, hi = h * d_k, (h + 1) * d_k
            dims_text = f"dim {lo}" if d_k == 1 else f"dims {lo}–{hi - 1}"
            out[f"{name} · head {h + 1} · {dims_text}"] = (m[:, lo:hi], tokens, dims[lo:hi])
    out["W_o"] = (random_projections(d_model, seed)[3], dims, dims)
    out["output = Concat · W_o"] = (steps.output, tokens, dims)
    return out


def check_exports(at: AppTest, seed: int, d_model: int, n_heads: int, seq_len: int) -> None:
    """Every matrix of every chart is offered for export, under its title, with the numbers and labels of `core`."""
    found, want = page_matrices(at), expected_exports(seed, d_model, n_heads, seq_len)
    assert set(found) == set(want)
    for title, (matrix, rows, cols) in want.items():
        np.testing.assert_allclose(found[title][0], matrix, atol=1e-12, err_msg=title)
        assert found[title][1:] == (rows, cols), title


def charts_by_role(at: AppTest) -> dict[str, np.ndarray]:
    """'maps' (H, T, T), 'qkv' (3, T, d_model), 'concat' (1, T, d_model), and each matrix panel by its title."""
    found = {}
    for view, calc, values in facet_arrays(at):
        if "h" in calc:
            found["maps"] = values
        elif "m" in calc:
            found["qkv" if view["facet"].get("row", {}).get("sort") == ["Q", "K", "V"] else "concat"] = values
        else:
            found.update(zip(view["facet"]["column"]["sort"], values, strict=True))
    return found


def head_headers(at: AppTest) -> list[str]:
    """The column headers of the Q/K/V chart: one per head."""
    (spec,) = [s for s, _ in chart_specs(at) if s.get("facet", {}).get("row", {}).get("sort") == ["Q", "K", "V"]]
    return spec["facet"]["column"]["sort"]


def parity(at: AppTest) -> tuple[float, float]:
    metrics = {m.label: float(m.value) for m in at.metric}
    return metrics["max |NumPy − PyTorch|, output"], metrics["max |NumPy − PyTorch|, per-head weights"]


def check_page(at: AppTest, seed: int, d_model: int, n_heads: int, seq_len: int) -> None:
    assert not at.exception and not at.error
    assert at.select_slider(key="d_model").value == d_model
    assert at.select_slider(key="heads").value == n_heads
    assert at.select_slider(key="heads").options == [str(h) for h in divisors(d_model)]
    assert at.slider(key="seq_len").value == seq_len
    steps = expected(seed, d_model, n_heads, seq_len)
    charts = charts_by_role(at)
    np.testing.assert_allclose(charts["maps"], steps.weights, atol=1e-12)
    assert len(head_headers(at)) == n_heads
    np.testing.assert_allclose(charts["qkv"], [steps.q, steps.k, steps.v], atol=1e-12)
    np.testing.assert_allclose(charts["concat"][0], steps.concat, atol=1e-12)
    np.testing.assert_allclose(charts["output = Concat · W_o"], steps.output, atol=1e-12)
    np.testing.assert_array_equal(charts["W_o"], random_projections(d_model, seed)[3])
    out_diff, w_diff = parity(at)
    assert out_diff < 1e-12 and w_diff < 1e-12  # float64 torch module: rounding only
    check_exports(at, seed, d_model, n_heads, seq_len)


def test_defaults_are_the_lessons_16_dims_and_4_heads():
    at = run_page(PAGE)
    check_page(at, seed=0, d_model=16, n_heads=4, seq_len=6)
    assert at.title[0].value == "Multi-head attention"
    assert any("4 heads × d_k = 4 = d_model = 16" in c.value for c in at.caption)
    assert any("d_k = 16/4 = 4" in m.value for m in at.markdown)  # section 1's formula
    assert head_headers(at)[0] == "head 1 · dims 0–3"


@pytest.mark.parametrize("seed, d_model, n_heads, seq_len", [
    (99, 4, 1, 2),  # smallest everything, largest seed
    (0, 4, 4, 16),  # d_k = 1 at the smallest width
    (3, 64, 64, 16),  # the heavy extreme: 64 heads of one dimension, 16 tokens
    (0, 64, 1, 16),  # one head over all 64 dims
])
def test_slider_extremes(seed, d_model, n_heads, seq_len):
    at = run_page(PAGE, seed=seed, d_model=d_model, heads=n_heads, seq_len=seq_len)
    check_page(at, seed, d_model, n_heads, seq_len)


def test_changing_d_model_falls_back_to_the_nearest_divisor():
    at = run_page(PAGE, heads=8)
    assert at.select_slider(key="heads").value == 8
    at.select_slider(key="d_model").set_value(6).run()  # 8 does not divide 6: nearest divisor is 6
    check_page(at, seed=0, d_model=6, n_heads=6, seq_len=6)
    at.select_slider(key="heads").set_value(2).run()
    at.select_slider(key="d_model").set_value(64).run()  # 2 still divides 64: kept
    assert at.select_slider(key="heads").value == 2 and not at.exception


def test_a_link_with_a_non_divisor_shows_a_valid_head_count():
    at = run_page(PAGE, d_model=6, heads=4)
    assert not at.exception
    assert at.select_slider(key="d_model").value == 6 and at.select_slider(key="heads").value == 3


def test_seed_changes_the_numbers():
    at = run_page(PAGE)
    before = charts_by_role(at)["maps"]
    at.slider(key="seed").set_value(5).run()
    after = charts_by_role(at)["maps"]
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, expected(5, 16, 4, 6).weights, atol=1e-12)


def test_the_export_menu_downloads_each_heads_matrices_as_csv_and_latex():
    """Through the menu itself: pick a head's map (CSV) and a head's block of Q (LaTeX), run the download."""
    seed, d_model, n_heads, seq_len = 3, 8, 2, 5
    steps = expected(seed, d_model, n_heads, seq_len)
    tokens = unique_labels(SENTENCE[:seq_len])
    with recorded_downloads() as files:
        at = run_page(PAGE, seed=seed, d_model=d_model, heads=n_heads, seq_len=seq_len)
        name, csv = download(at, files, "attention weights · head 2 · CSV")
        assert name == "attention_weights_head_2.csv"
        matrix, rows, cols = parse_csv(csv)
        np.testing.assert_allclose(matrix, steps.weights[1], rtol=0, atol=1e-15)  # full precision
        assert rows == cols == tokens
        name, tex = download(at, files, "Q · head 2 · dims 4–7 · LaTeX bmatrix")
        assert name == "q_head_2_dims_4_7.tex"
        np.testing.assert_allclose(parse_latex(tex), steps.q[:, 4:8], rtol=0, atol=5e-4 + 1e-12)  # 3 decimals
        name, png = download(at, files, "Q, K, V by head · PNG image")  # the chart itself, from the page's one menu
        assert name == "q_k_v_by_head.png" and png[:8] == b"\x89PNG\r\n\x1a\n"


def test_presenter_mode_exports_the_same_matrices():
    """Presenter mode enlarges the drawn chart (`for_projector`); the exported numbers must not change."""
    at = run_page(PAGE, present="true", d_model=8, heads=2)
    assert not at.exception
    check_exports(at, seed=0, d_model=8, n_heads=2, seq_len=6)


# --- Linked highlighting: a click on a head's map lights up the rows of Q and K that made it ------------------

def highlighted_cells(at: AppTest) -> set[tuple[int, int, int]] | None:
    """(matrix, token, dim) of the bright cells of the Q/K/V chart; None when nothing is highlighted.

    The chart's data is one value per cell in (matrix, token, dim) order; the spec lists the 1-based record
    numbers of the bright ones in its "alpha" calculation.
    """
    for spec, _ in chart_specs(at):
        if spec.get("facet", {}).get("row", {}).get("field") != "matrix":
            continue
        (alpha,) = [t["calculate"] for t in spec["transform"] if t.get("as") == "alpha"] or [None]
        if alpha is None:
            return None
        numbers = json.loads(alpha[alpha.index("["):alpha.index("]") + 1])
        return {tuple(int(x) for x in np.unravel_index(n - 1, (3, 6, 16))) for n in numbers}  # the page's defaults
    raise AssertionError("no Q/K/V chart on the page")


def test_clicking_a_weight_highlights_its_query_and_key_rows_in_that_heads_block():
    at = run_page(PAGE)  # d_model 16, 4 heads (d_k 4), 6 tokens
    assert highlighted_cells(at) is None
    at = click_point(at, "heads_cell", {"h": 1, "q": 2, "k": 0})
    assert not at.exception
    want = {(0, 2, d) for d in range(4, 8)} | {(1, 0, d) for d in range(4, 8)}  # Q row 2 and K row 0, dims 4-7
    assert highlighted_cells(at) == want
    steps = expected(0, 16, 4, 6)
    score = steps.q_heads[1, 2] @ steps.k_heads[1, 0] / 2.0
    caption = next(c.value for c in at.caption if c.value.startswith("Highlighted"))
    assert "head 2" in caption and "“sat”" in caption and "“the (0)”" in caption
    assert f"the score {score:.3f}" in caption and f"the weight is {steps.weights[1, 2, 0]:.3f}" in caption


def qkv_printed_where(at: AppTest) -> str | None:
    """The filter choosing which Q/K/V cells print their values; None when the chart prints none."""
    for spec, _ in chart_specs(at):
        if spec.get("facet", {}).get("row", {}).get("field") == "matrix":
            texts = [layer for layer in spec["spec"].get("layer", []) if layer["mark"]["type"] == "text"]
            if not texts:
                return None
            (text,) = texts
            (only,) = text["transform"]
            return only["filter"]
    raise AssertionError("no Q/K/V chart on the page")


def test_q_k_v_print_the_numbers_of_the_clicked_weights_rows_only():
    """Colours and tooltips alone at first; a click prints the two rows whose dot product makes the weight."""
    at = run_page(PAGE)
    assert qkv_printed_where(at) is None
    at = click_point(at, "heads_cell", {"h": 1, "q": 2, "k": 0})
    assert qkv_printed_where(at) == "datum.alpha == 1"  # the bright cells: `highlighted_cells`
    assert any("with their numbers printed" in c.value for c in at.caption)


def test_a_click_from_more_heads_is_ignored():
    at = click_point(run_page(PAGE, heads="8"), "heads_cell", {"h": 6, "q": 1, "k": 1})
    assert highlighted_cells(at) is not None
    at.select_slider(key="heads").set_value(2).run()
    assert not at.exception and highlighted_cells(at) is None
    assert not any(c.value.startswith("Highlighted") for c in at.caption)


@pytest.mark.parametrize("seed, d_model, n_heads, seq_len", [(0, 16, 4, 6), (3, 12, 3, 3), (1, 64, 8, 16),
                                                             (2, 6, 1, 12)])
def test_the_cost_and_the_repeated_word_sentences_agree_with_the_maps(seed, d_model, n_heads, seq_len):
    """The page never says H heads cost what one does: it counts the score work (the same as one full-width head) and
    the maps (H of T × T); and a repeated word has equal rows in every head, as core's maps show."""
    import re

    at = run_page(PAGE, seed=seed, d_model=d_model, heads=n_heads, seq_len=seq_len)
    assert not at.exception
    texts = [el.value for el in [*at.markdown, *at.caption]]
    assert not any("same cost" in t for t in texts)
    (cost,) = [t for t in texts if t.startswith("What H heads cost")]
    d_k = d_model // n_heads
    found = re.search(r"here (\d+) × (\d+)² × (\d+) = ([\d,]+) multiply-adds .* as one head of width (\d+) would do.*"
                      r"(\d+) maps? of (\d+) × (\d+), ([\d,]+) weights to compute and keep, against ([\d,]+)", cost)
    assert found, cost
    h, t, dk, work, width, maps, rows, cols, weights, one = (int(g.replace(",", "")) for g in found.groups())
    assert (h, t, dk, width, maps, rows, cols) == (n_heads, seq_len, d_k, d_model, n_heads, seq_len, seq_len)
    assert work == seq_len * seq_len * d_model  # sum over heads of T² d_k: one full-width head's QKᵀ
    assert weights == expected(seed, d_model, n_heads, seq_len).weights.size and one == seq_len**2

    tokens = SENTENCE[:seq_len]
    steps = expected(seed, d_model, n_heads, seq_len)
    (repeat,) = [t for t in texts if "appears at positions" in t or "No word appears twice" in t]
    if tokens.count("the") > 1:
        at_positions = [i for i, w in enumerate(tokens) if w == "the"]
        listed = ", ".join(map(str, at_positions[:-1])) + f" and {at_positions[-1]}"
        assert repeat.startswith(f"*the* appears at positions {listed}:")
        assert np.abs(steps.weights[:, at_positions] - steps.weights[:, at_positions[:1]]).max() < 1e-12
        assert "rows of weights are equal" in repeat
    else:
        assert len(set(tokens)) == len(tokens) and repeat.startswith("No word appears twice")


@pytest.mark.parametrize("query, heads", [({"seed": "3", "heads": "2"}, 2), ({"d_model": "6"}, 3),
                                          ({"d_model": "48", "heads": "8"}, 8)])
def test_the_link_keeps_the_heads_over_later_runs(query, heads):
    """A link leaves out a value equal to the widget's default, so the default is a function of the link's d_model
    alone: after any later run the copied link still opens the same number of heads."""
    at = run_page(PAGE, **query)
    for _ in range(2):
        at.run()
        assert not at.exception and at.select_slider(key="heads").value == heads
        reopened = run_page(PAGE, **dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(share_link(at)).query)))
        assert reopened.select_slider(key="heads").value == heads, share_link(at)


def test_a_head_count_the_new_d_model_does_not_divide_moves_to_the_nearest_divisor():
    at = run_page(PAGE, heads="8")
    at.select_slider(key="d_model").set_value(6).run()
    assert not at.exception and at.select_slider(key="heads").value == 6
    at.run()  # and it stays where it moved
    assert not at.exception and at.select_slider(key="heads").value == 6


def page_links(at) -> list[tuple[str, dict[str, str]]]:
    """Every page link of the page body: (label, its query parameters)."""
    return [(el.proto.label, dict(urllib.parse.parse_qsl(el.proto.query_string))) for el in at.main.get("page_link")]


def test_the_trained_heads_are_found_from_the_real_models_numbers_and_each_link_opens_its_head():
    """The heads quoted are the real model's strongest at each habit on the reference sentence (recomputed here from
    its weights), their numbers are on the page, and each link opens the real-model page on that layer and head,
    whose map has the habit."""
    from pretrained.model import load_model, run_model
    from tests.helpers.apptest import heatmaps

    at = run_page(PAGE)
    assert not at.exception
    links = [(label, query) for label, query in page_links(at) if "up close" in label]
    text = "\n".join(m.value for m in at.markdown)
    assert "In a trained model, heads specialise." in text
    run = run_model("The cat sat on the mat because it was tired.", load_model())
    t = len(run.tokens)
    previous = np.mean([run.weights[..., i, i - 1] for i in range(1, t)], axis=0)  # (L, H)
    cls, sep = run.weights[..., :, 0].mean(axis=-1), run.weights[..., :, t - 1].mean(axis=-1)  # (L, H) each
    # a head at rest: on whichever special token some head parks most
    habits = {"previous token": previous, **({"[CLS]": cls} if cls.max() >= sep.max() else {"[SEP]": sep})}
    assert len(links) == len(habits)
    for (label, query), (habit, scores) in zip(links, habits.items(), strict=True):
        layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
        assert query == {"text": run.text, "layer": str(layer + 1), "head": str(head + 1)}, (habit, query)
        assert label == f"Layer {layer + 1}, head {head + 1} up close"
        assert f"**{habit}**" in text and f"layer {layer + 1}, head {head + 1}" in text
        assert f"{scores[layer, head]:.2f}" in text and scores[layer, head] >= 2 / t  # clearly: twice an even spread
        real = AppTest.from_file(APP, default_timeout=600)
        real.switch_page("app_pages/pretrained.py")
        real.query_params.update(query)
        real.run()
        assert not real.exception and not real.error
        assert (real.slider(key="layer").value, real.slider(key="head").value) == (layer + 1, head + 1)
        shown = heatmaps(real)[f"layer {layer + 1}, head {head + 1}"]  # the close-up, as drawn
        np.testing.assert_allclose(shown, run.weights[layer, head], atol=1e-12)
        on_screen = {"previous token": lambda: np.mean(np.diag(shown, -1)), "[CLS]": lambda: shown[:, 0].mean(),
                     "[SEP]": lambda: shown[:, -1].mean()}[habit]()
        assert on_screen == pytest.approx(scores[layer, head], abs=1e-12)


def test_the_trained_heads_sentence_claims_specialising_only_from_clear_numbers():
    from pretrained.patterns import FoundHead
    from ui.wording.multi_head import trained_heads

    clear = FoundHead("previous token", 2, 4, 0.62, 1 / 13, "The cat sat.")
    faint = FoundHead("[SEP]", 0, 0, 0.1, 1 / 13, "The cat sat.")
    lead, lines = trained_heads([clear, faint])
    assert lead.startswith("In a trained model, heads specialise.") and "“The cat sat.”" in lead
    assert "layer 3, head 5" in lines[0] and "**0.62**" in lines[0] and "No head does this clearly" in lines[1]
    lead, _ = trained_heads([faint])
    assert "none of these does so clearly" in lead and "heads specialise." not in lead
    lead, lines = trained_heads([])
    assert "could not be loaded" in lead and lines == []


# ------------------------------------------------------------------- what the shared tests know of this page

SHARED = PageTests(
    probe=Probe(dict(seed=0, d_model=16, heads=4, seq_len=6), lambda at: charts_by_role(at)["maps"],
                lambda p: expected(p["seed"], p["d_model"], p["heads"], p["seq_len"]).weights),
    valid=[Case("multi_head", {"present": "true"}, {"present": True})],
    malformed=[
        Case("multi_head", {"seed": "-1", "d_model": "5", "seq_len": "1", "present": "maybe"},
             {"seed": 0, "d_model": 16, "heads": 4, "seq_len": 6, "present": False},
             covers=("seed", "d_model", "seq_len", "present")),
        Case("multi_head", {"d_model": "16", "heads": "7"}, {"d_model": 16, "heads": 4}, covers=("heads",)),
        Case("multi_head", {"d_model": "6", "heads": "4"}, {"d_model": 6, "heads": 3}, covers=("heads",),
             id="multi_head-heads-no-longer-divides"),
    ],
    elsewhere={(key, VALID): ("tests/pages/test_multi_head.py::test_slider_extremes",)
               for key in ("seed", "d_model", "heads", "seq_len")},
    data_step=("seed", (0, 1)),
    canvas=True,
    concept=True,
    quiz=Quiz("multi_head_width", "it halves"),
    click=lambda at: click_point(at, "heads_cell", {"h": 1, "q": 2, "k": 0}),
)
