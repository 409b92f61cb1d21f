"""The order-and-permutation page, run headless: the invariance without PE, its breaking with PE, bad input."""

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import positional_encoding
from core.embeddings import embed_tokens, random_projections
from core.permutation import parse_permutation, permutation_check
from tests.helpers.apptest import chart_specs, facet_arrays, run_page
from tests.helpers.exports import download, page_matrices, parse_csv, parse_latex, recorded_downloads
from tests.helpers.registry import MALFORMED, VALID, Case, PageTests, Probe, Quiz

PAGE = "app_pages/permutation.py"
TOKENS = "the cat sat on the mat".split()


def metrics(at: AppTest) -> dict[str, float]:
    return {m.label.removesuffix(" (with PE)"): float(m.value) for m in at.metric}


def output_diff(at: AppTest) -> float:
    return metrics(at)["max |Attn(X) − Pᵀ Attn(PX)|"]


def panels(at: AppTest) -> dict[str, np.ndarray]:
    """Every `ui.charts.facets.matrix_panels` panel on the page, by title, as a matrix."""
    found = {}
    for view, _, values in facet_arrays(at):
        found.update(zip(view["facet"]["column"]["sort"], values, strict=True))
    return found


def panel_row_labels(at: AppTest) -> dict[str, list[str]]:
    """The row labels of every panel, read from the chart's `calculate` transform (a JSON array literal)."""
    found = {}
    for spec, _ in chart_specs(at):
        calc = {t["as"]: t["calculate"] for t in spec.get("transform", []) if "calculate" in t}
        if "panel" in calc:
            rows = json.loads(calc["row"].removesuffix("[datum.p][datum.r]"))
            found.update(zip(spec["facet"]["column"]["sort"], rows, strict=True))
    return found


def test_defaults_show_the_invariance():
    at = run_page(PAGE)
    assert not at.exception and not at.error
    assert at.text_input(key="perm").value == "5,0,1,2,3,4" and at.toggle(key="pe").value is False
    m = metrics(at)
    assert output_diff(at) < 1e-12 and m["max |A(shuffled) − P A Pᵀ|, all heads"] < 1e-12
    assert 0 < m["PyTorch: max |out − un-permuted out|"] < 1e-5  # float32, as in the lesson
    p = panels(at)
    np.testing.assert_allclose(p["A of the shuffled input"], p["P A Pᵀ (original, reordered)"], atol=1e-12)
    np.testing.assert_allclose(p["Attn(X)"], p["Pᵀ Attn(PX), rows moved back"], atol=1e-12)
    np.testing.assert_array_equal(p["PX"], p["X"][[5, 0, 1, 2, 3, 4]])
    expected = permutation_check(embed_tokens(TOKENS, 16, 0), random_projections(16, 0), [5, 0, 1, 2, 3, 4], 4)
    np.testing.assert_allclose(p["A (original)"], expected.weights.mean(axis=0), atol=1e-12)
    assert any("mat the cat sat on the" in md.value for md in at.markdown)
    rows = panel_row_labels(at)  # every word keeps its label where it moves
    assert rows["A (original)"] == ["the (0)", "cat", "sat", "on", "the (4)", "mat"]
    assert rows["A of the shuffled input"] == rows["P A Pᵀ (original, reordered)"] == rows["PX"] == [
        "mat", "the (0)", "cat", "sat", "on", "the (4)"]
    assert rows["Pᵀ Attn(PX), rows moved back"] == rows["Attn(X)"] == rows["A (original)"]


def test_positional_encoding_breaks_it():
    at = run_page(PAGE, pe="true")
    assert not at.exception and at.toggle(key="pe").value is True
    m = metrics(at)
    assert output_diff(at) > 1e-3 and m["max |A(shuffled) − P A Pᵀ|, all heads"] > 1e-3
    assert m["PyTorch: max |out − un-permuted out|"] == pytest.approx(output_diff(at), rel=1e-3, abs=1e-3)
    p = panels(at)
    assert "X + PE" in p and not np.allclose(p["A of the shuffled input"], p["P A Pᵀ (original, reordered)"])
    at.toggle(key="pe").set_value(False).run()  # and switching it off restores the symmetry
    assert output_diff(at) < 1e-12


@pytest.mark.parametrize("bad, message", [("abc", "not a whole number"), ("0,0,1", "repeated"),
                                          ("5,1", "2 number(s) but there are 6 tokens")])
def test_bad_permutations_show_an_error_and_fall_back(bad, message):
    at = run_page(PAGE, perm=bad)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value and "Using 5,0,1,2,3,4 instead" in at.error[0].value
    assert output_diff(at) < 1e-12


def test_shuffle_writes_a_new_valid_permutation_into_the_box():
    at = run_page(PAGE, pe="true")
    seen = {at.text_input(key="perm").value}
    for _ in range(2):
        at.button[0].click().run()
        text = at.text_input(key="perm").value
        assert not at.exception and not at.error and text not in seen
        perm = parse_permutation(text, 6)
        assert np.any(perm != np.arange(6))
        seen.add(text)
        assert output_diff(at) > 1e-3  # still with PE: the shuffle changed only the permutation


def test_a_new_sentence_length_resets_the_permutation_and_a_typed_one_is_used():
    at = run_page(PAGE)
    at.text_input(key="text").set_value("the dog bit the man").run()
    assert not at.exception and not at.error
    assert at.text_input(key="perm").value == "4,0,1,2,3"
    assert any("reset to 4,0,1,2,3" in i.value for i in at.info)
    at.text_input(key="perm").set_value("1,0,2,3,4").run()
    assert not at.error and output_diff(at) < 1e-12
    assert any("dog the bit the man" in md.value for md in at.markdown)
    # A bad edit now falls back to the last valid permutation, not the default.
    at.text_input(key="perm").set_value("1,1,2,3,4").run()
    assert "Using 1,0,2,3,4 instead" in at.error[0].value


def test_link_with_sentence_and_permutation_and_a_single_word():
    at = run_page(PAGE, text="a b c", perm="2,0,1", pe="true", seed="99")
    assert not at.exception and not at.error and at.text_input(key="perm").value == "2,0,1"
    assert output_diff(at) > 1e-3
    words = "the dog bit the man and the man bit the dog again today in the park"  # 16 words, the most
    at = run_page(PAGE, text=words, pe="true")
    assert not at.exception and not at.error
    assert at.text_input(key="perm").value == "15," + ",".join(map(str, range(15)))
    assert output_diff(at) > 1e-3 and panels(at)["X + PE"].shape == (16, 16)
    at = run_page(PAGE, text=words + " again")  # 17: the sentence box refuses it and keeps the default sentence
    assert not at.exception and len(at.error) == 1 and output_diff(at) < 1e-12
    at = run_page(PAGE, text="alone", perm="0")
    assert not at.exception and output_diff(at) == 0.0
    assert any("single word" in i.value for i in at.info)


@pytest.mark.parametrize("pe", [False, True])
def test_every_panel_exports_with_its_own_labels(pe):
    """Inputs, the three maps and the outputs: each panel offered for export with `core`'s numbers and its labels."""
    perm = [5, 0, 1, 2, 3, 4]
    at = run_page(PAGE, pe=str(pe).lower())
    check = permutation_check(embed_tokens(TOKENS, 16, 0), random_projections(16, 0), perm, 4, add_pe=pe)
    labels = ["the (0)", "cat", "sat", "on", "the (4)", "mat"]
    moved, dims = [labels[p] for p in perm], [str(j) for j in range(16)]
    want = {
        "X + PE" if pe else "X": (check.x, labels, dims),
        "PX + PE" if pe else "PX": (check.x_perm, moved, dims),
        "A (original)": (check.weights.mean(axis=0), labels, labels),
        "A of the shuffled input": (check.weights_perm.mean(axis=0), moved, moved),
        "P A Pᵀ (original, reordered)": (check.weights_expected.mean(axis=0), moved, moved),
        "Attn(X)": (check.output, labels, dims),
        "Pᵀ Attn(PX), rows moved back": (check.output_unpermuted, labels, dims),
    }
    found = page_matrices(at)
    assert set(found) == set(want)
    for title, (matrix, rows, cols) in want.items():
        np.testing.assert_allclose(found[title][0], matrix, atol=1e-12, err_msg=title)
        assert found[title][1:] == (rows, cols), title


def test_the_export_menu_downloads_a_reordered_map_as_csv_and_latex():
    perm = [2, 0, 1]
    tokens = ["a", "b", "a"]
    check = permutation_check(embed_tokens(tokens, 16, 7), random_projections(16, 7), perm, 4, add_pe=True)
    with recorded_downloads() as files:
        at = run_page(PAGE, text="a b a", perm="2,0,1", pe="true", seed="7")
        name, csv = download(at, files, "P A Pᵀ (original, reordered) · CSV")
        assert name == "p_a_p_original_reordered.csv"
        matrix, rows, cols = parse_csv(csv)
        np.testing.assert_allclose(matrix, check.weights_expected.mean(axis=0), rtol=0, atol=1e-15)
        assert rows == cols == ["a (2)", "a (0)", "b"]  # each word keeps its label in its new place
        name, tex = download(at, files, "A of the shuffled input · LaTeX bmatrix")
        assert name == "a_of_the_shuffled_input.tex"
        np.testing.assert_allclose(parse_latex(tex), check.weights_perm.mean(axis=0), rtol=0, atol=5e-4 + 1e-12)
        name, svg = download(at, files, "X + PE, PX + PE · SVG drawing")
        assert name == "x_pe_px_pe.svg" and "<svg" in svg[:200]


@pytest.mark.parametrize("perm, pe", [("5,0,1,2,3,4", "true"), ("5,0,1,2,3,4", "false"), ("0,1,2,3,4,5", "true"),
                                      ("4,1,2,3,0,5", "true"), ("1,0,2,3,4,5", "true")])
def test_whether_the_runs_agree_is_read_from_their_differences(perm, pe):
    """'They differ' only where they do: a shuffle that swaps the two equal words 'the' (or none) changes no input,
    so even with positional encoding the maps and outputs agree, and the page says so."""
    at = run_page(PAGE, perm=perm, pe=pe)
    assert not at.exception
    tokens = "the cat sat on the mat".split()
    check = permutation_check(embed_tokens(tokens, 16, 0), random_projections(16, 0), parse_permutation(perm, 6),
                              n_heads=4, add_pe=pe == "true")
    text = " ".join(m.value for m in at.markdown)
    maps_differ, outputs_differ = check.weights_diff > 1e-9, check.output_diff > 1e-9
    assert (f"the middle and right maps differ, by up to {check.weights_diff:.2f}" in text) == maps_differ
    assert (f"Here they differ, by up to {check.output_diff:.2f}" in text) == outputs_differ
    assert bool(at.warning) == outputs_differ
    assert ("order now matters" in " ".join(w.value for w in at.warning)) == outputs_differ
    if pe == "true" and not outputs_differ:
        assert "agree even with positional encoding" in text


# ------------------------------------------------------------------- what the shared tests know of this page

def permutation_shown(at: AppTest) -> dict[str, np.ndarray]:
    return {k: v for k, v in panels(at).items() if k in ("X", "PX", "X + PE", "PX + PE")}


def permutation_expected(p) -> dict[str, np.ndarray]:
    tokens = p["text"].split()
    E = embed_tokens(tokens, 16, p["seed"])
    perm = [int(i) for i in p["perm"].split(",")]
    if not p["pe"]:
        return {"X": E, "PX": E[perm]}
    pe = positional_encoding(len(tokens), 16)  # each position keeps its encoding, whichever word moves there
    return {"X + PE": E + pe, "PX + PE": E[perm] + pe}


TEN_THOUSAND_CHARACTERS = "w " * 5000  # 5,000 words
HERE = "tests/pages/test_permutation.py::"
SHARED = PageTests(
    probe=Probe(dict(text="the cat sat on the mat", seed=0, perm="5,0,1,2,3,4", pe=False), permutation_shown,
                permutation_expected),
    # a new sentence brings its own default permutation, so text and perm are checked apart
    valid=[Case("permutation", {"text": "a b c", "present": "true"},
                {"text": "a b c", "perm": "2,0,1", "present": True}, covers=("text", "present")),
           Case("permutation", {"seed": "99", "perm": "1,0,2,3,4,5"}, {"seed": 99, "perm": "1,0,2,3,4,5"})],
    malformed=[Case("permutation",
                    {"text": TEN_THOUSAND_CHARACTERS, "seed": "1.5e400", "pe": "sometimes", "present": "maybe"},
                    {"text": TEN_THOUSAND_CHARACTERS, "seed": 0, "pe": False, "present": False},
                    uses={"text": "the cat sat on the mat"}, error="5000 words is more than the 16")],
    elsewhere={("pe", VALID): (HERE + "test_positional_encoding_breaks_it",),
               ("perm", MALFORMED): (HERE + "test_bad_permutations_show_an_error_and_fall_back",)},
    data_step=("seed", (0, 1)),
    canvas=True,
    concept=True,
    quiz=Quiz("permutation_same", "is the same vector, just in its new row"),
)
