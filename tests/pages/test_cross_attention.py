"""AppTests of app_pages/cross_attention.py: the three maps, their shapes, bad input, slider extremes."""

import numpy as np
import pytest

from core.encoder_decoder import encoder_decoder_attention, shifted_right
from tests.helpers.apptest import chart_specs, heatmap_tooltips, heatmaps, run_page
from tests.helpers.clicks import click_cell
from tests.helpers.registry import MALFORMED, VALID, Case, PageTests, Probe, Quiz

PAGE = "app_pages/cross_attention.py"
SRC = "the cat sat on the mat".split()
TGT = "le chat s'est assis".split()
TWELVE = "a b c d e f g h i j k l"
ENC, DEC = "encoder self-attention (source × source)", "decoder masked self-attention (target × target)"


def cross_title(t_tgt: int, t_src: int) -> str:
    return f"cross-attention ({t_tgt} target queries × {t_src} source keys)"


def all_heatmaps(at):
    """`heatmaps` plus the maps of a vconcat (the page stacks the two self-attentions when they are wide)."""
    found = heatmaps(at)
    for spec, frames in chart_specs(at):
        for sub in spec.get("vconcat", []):
            df = frames[sub["data"]["name"]]
            found[sub["title"]] = df.sort_values(["i", "j"])["value"].to_numpy().reshape(df["i"].max() + 1, -1)
    return found


def maps(at):
    found = all_heatmaps(at)
    cross = [v for k, v in found.items() if k.startswith("cross-attention")]
    assert len(cross) == 1
    return found[ENC], found[DEC], cross[0]


def heatmap_frame(at, title):
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", spec.get("vconcat", [spec])):
            if sub.get("title") == title:
                return frames[sub["data"]["name"]]
    raise AssertionError(f"no heatmap titled {title!r}")


def assert_matches_core(at, src, tgt, d_model=16, seed=0):
    r = encoder_decoder_attention(src, shifted_right(tgt), d_model=d_model, seed=seed)
    enc, dec, cross = maps(at)
    np.testing.assert_allclose(enc, r.encoder.weights)
    np.testing.assert_allclose(dec, r.decoder.weights)
    np.testing.assert_allclose(cross, r.cross.weights)
    return enc, dec, cross


def test_defaults():
    at = run_page(PAGE)
    assert not at.exception and not at.error
    enc, dec, cross = assert_matches_core(at, SRC, TGT)
    assert enc.shape == (6, 6) and dec.shape == (4, 4) and cross.shape == (4, 6)
    assert cross_title(4, 6) in all_heatmaps(at)
    assert np.all(dec[np.triu_indices(4, 1)] == 0.0) and np.all(enc > 0)
    np.testing.assert_allclose(cross.sum(axis=1), 1.0, atol=1e-12)
    # rows are the decoder's positions, labelled with what each reads (the target shifted right), columns the
    # encoder's source tokens
    frame = heatmap_frame(at, cross_title(4, 6))
    assert list(dict.fromkeys(frame["row"])) == ["<s>", "le", "chat", "s'est"]
    assert list(dict.fromkeys(frame["col"])) == ["the (0)", "cat", "sat", "on", "the (4)", "mat"]
    assert len(at.metric) == 3
    for metric in at.metric:
        assert float(metric.value) < 1e-6
    assert any(r"\mathbb{R}^{4 \times 6}" in m.value for m in at.markdown)  # section 3's formula
    assert len(at.get("graphviz_chart")) == 1


def test_editing_the_sentences_updates_every_map():
    at = run_page(PAGE)
    at.text_input(key="tgt").set_value("le chien").run()
    at.text_input(key="src").set_value("the dog barked").run()
    assert not at.exception and not at.error
    _, dec, cross = assert_matches_core(at, ["the", "dog", "barked"], ["le", "chien"])
    assert dec.shape == (2, 2) and cross.shape == (2, 3)


@pytest.mark.parametrize("seed, d_model", [(0, 4), (99, 64)])
def test_slider_extremes(seed, d_model):
    at = run_page(PAGE, seed=seed, d_model=d_model)
    assert not at.exception and not at.error
    assert at.slider(key="seed").value == seed and at.select_slider(key="d_model").value == d_model
    assert_matches_core(at, SRC, TGT, d_model=d_model, seed=seed)
    assert all(float(m.value) < 1e-6 for m in at.metric)


@pytest.mark.parametrize("src, tgt, shape", [("chat", TWELVE, (12, 1)), (TWELVE, "chat", (1, 12))])
def test_different_lengths_give_a_non_square_cross_map(src, tgt, shape):
    at = run_page(PAGE, src=src, tgt=tgt, seed=99, d_model=64)
    assert not at.exception and not at.error
    enc, dec, cross = assert_matches_core(at, src.split(), tgt.split(), d_model=64, seed=99)
    assert cross.shape == shape
    assert enc.shape == (len(src.split()),) * 2 and dec.shape == (len(tgt.split()),) * 2
    frame = heatmap_frame(at, cross_title(*shape))
    assert frame["row"].nunique() == shape[0] and frame["col"].nunique() == shape[1]
    if shape[1] == 1:
        np.testing.assert_array_equal(cross, 1.0)
        assert any("single source word" in c.value for c in at.caption)


def test_heaviest_setting_twelve_by_twelve():
    at = run_page(PAGE, src=TWELVE, tgt=TWELVE.upper(), seed=99, d_model=64)
    assert not at.exception and not at.error
    _, dec, cross = assert_matches_core(at, TWELVE.split(), TWELVE.upper().split(), d_model=64, seed=99)
    assert cross.shape == (12, 12) and np.all(dec[np.triu_indices(12, 1)] == 0.0)
    assert "hconcat" in chart_specs(at)[0][0]  # short labels: the two self-attention maps fit side by side


def test_long_words_stack_the_self_attention_maps():
    src = "internationalisation " + " ".join(f"w{i}" for i in range(11))
    at = run_page(PAGE, src=src, tgt=src)
    assert not at.exception and not at.error
    assert "vconcat" in chart_specs(at)[0][0]
    enc, dec, cross = assert_matches_core(at, src.split(), src.split())
    assert enc.shape == dec.shape == cross.shape == (12, 12)


@pytest.mark.parametrize("key", ["src", "tgt"])
def test_empty_sentence_in_the_url_shows_an_error(key):
    at = run_page(PAGE, **{key: " "})
    assert not at.exception
    assert len(at.error) == 1 and "empty" in at.error[0].value
    assert_matches_core(at, SRC, TGT)  # the default sentences are kept


def test_too_many_tokens_shows_an_error():
    at = run_page(PAGE, src=" ".join(["w"] * 13))
    assert not at.exception
    assert len(at.error) == 1 and "13 words" in at.error[0].value
    assert_matches_core(at, SRC, TGT)


def test_repeated_token_renders_as_two_distinct_rows():
    at = run_page(PAGE, src="the cat saw the dog", tgt="the end the the")
    assert not at.exception and not at.error
    enc, dec, _ = assert_matches_core(at, "the cat saw the dog".split(), "the end the the".split())
    rows = list(dict.fromkeys(heatmap_frame(at, ENC)["row"]))
    assert rows == ["the (0)", "cat", "saw", "the (3)", "dog"]
    assert not np.allclose(enc[0], enc[3])  # same word, different position, different row
    assert list(dict.fromkeys(heatmap_frame(at, DEC)["row"])) == ["<s>", "the (1)", "end", "the (3)"]


# --- Explain on hover, linked highlighting ---------------------------------------------------------------------

CLICK_KEY = "cross_cell"


def highlighted_rows(at, title):
    """Rows drawn at full opacity on the heatmap titled `title` (None: nothing is highlighted)."""
    frame = heatmap_frame(at, title)
    if "alpha" not in frame:
        return None
    return sorted(frame.loc[frame["alpha"] == 1.0, "i"].unique().tolist())


@pytest.mark.parametrize("seed, d_model", [(0, 16), (99, 4)])
def test_weight_tooltips_show_how_each_weight_was_computed(seed, d_model):
    at = run_page(PAGE, seed=seed, d_model=d_model)
    assert not at.exception
    r = encoder_decoder_attention(SRC, shifted_right(TGT), d_model=d_model, seed=seed)
    for title, block in ((ENC, r.encoder), (DEC, r.decoder), (cross_title(4, 6), r.cross)):
        tips = heatmap_tooltips(at, title)
        raw = block.Q @ block.K.T
        np.testing.assert_allclose(tips["raw score q_i · k_j"].astype(float), raw, atol=1e-12)
        scaled = tips[f"scaled score q_i · k_j / √{d_model}"].astype(float)
        np.testing.assert_allclose(scaled, raw / np.sqrt(d_model), atol=1e-12)
        masked = np.zeros(raw.shape, dtype=bool) if block.mask is None else ~block.mask
        exps = np.where(masked, 0.0, np.exp(raw / np.sqrt(d_model)))
        exp_title = "exp(scaled)" if block.mask is None else "exp(scaled + M)"
        np.testing.assert_allclose(tips[exp_title].astype(float), exps, rtol=1e-3)
        np.testing.assert_allclose(tips["row sum of exp"].astype(float),
                                   np.repeat(exps.sum(1, keepdims=True), raw.shape[1], axis=1), rtol=1e-3)
        how = tips["A_ij = exp / row sum"]
        shown = np.array([float(h.rsplit("= ", 1)[1]) if not m else np.nan for h, m in zip(how.ravel(),
                                                                                          masked.ravel(), strict=True)])
        np.testing.assert_allclose(shown[~masked.ravel()], block.weights[~masked], atol=1e-4)
        assert ("mask M_ij" in tips) == (block.mask is not None)
    dec = heatmap_tooltips(at, DEC)
    upper = np.triu(np.ones((4, 4), dtype=bool), 1)
    assert (dec["mask M_ij"][upper] == "−∞").all() and (dec["mask M_ij"][~upper] == "0").all()
    assert dec["A_ij = exp / row sum"][0, 3] == "exactly 0: “s'est” comes after “<s>”, so M = −∞ and e^(−∞) = 0"


def test_clicking_a_cross_weight_highlights_where_its_query_and_key_come_from():
    at = run_page(PAGE)
    assert highlighted_rows(at, ENC) is None and highlighted_rows(at, DEC) is None
    at = click_cell(at, CLICK_KEY, 3, 5)  # the decoder position reading "s'est" (query) x source "mat" (key)
    assert not at.exception
    assert highlighted_rows(at, DEC) == [3]  # the decoder state of "s'est" asks the query
    assert highlighted_rows(at, ENC) == [5]  # the memory row of "mat" gives the key
    captions = " ".join(c.value for c in at.caption)
    w = encoder_decoder_attention(SRC, shifted_right(TGT)).cross.weights[3, 5]
    assert f"Clicked A^x[s'est, mat] = {w:.3f}" in captions
    assert "row “s'est” of the decoder map" in captions and "row “mat” of the encoder map" in captions


def test_a_click_remembered_from_longer_sentences_is_ignored():
    at = click_cell(run_page(PAGE, src=TWELVE, tgt=TWELVE.upper()), CLICK_KEY, 11, 10)
    assert highlighted_rows(at, DEC) == [11] and highlighted_rows(at, ENC) == [10]
    at.text_input(key="src").set_value(" ".join(SRC)).run()
    at.text_input(key="tgt").set_value(" ".join(TGT)).run()
    assert not at.exception and not at.error
    assert at.session_state[CLICK_KEY]["selection"]["cell"] == [{"i": 11, "j": 10}]  # still remembered
    assert highlighted_rows(at, ENC) is None and highlighted_rows(at, DEC) is None
    assert not any(c.value.startswith(("Clicked", "Highlighted")) for c in at.caption)
    assert_matches_core(at, SRC, TGT)


@pytest.mark.parametrize("seed, d_model, src, tgt", [(0, 16, SRC, TGT), (5, 16, SRC, TGT), (2, 16, SRC, TGT),
                                                     (7, 64, "a b c".split(), "x y z w".split())])
def test_the_alignment_sentence_says_what_the_random_map_shows(seed, d_model, src, tgt):
    """Each target word's strongest source word is quoted from the map; a map whose strongest links run in the
    source's order is called a coincidence of the seed, any other is said to follow no translation."""
    at = run_page(PAGE, seed=seed, d_model=d_model, src=" ".join(src), tgt=" ".join(tgt))
    assert not at.exception
    weights = encoder_decoder_attention(src, shifted_right(tgt), d_model=d_model, seed=seed).cross.weights
    from ui.charts.heatmap import unique_labels

    s_labels, t_labels = unique_labels(src), unique_labels(shifted_right(tgt))
    strongest = weights.argmax(axis=1)
    (sentence,) = [c.value for c in at.caption if c.value.startswith("Read row by row")]
    for i, j in enumerate(strongest):
        assert f"{t_labels[i]} → {s_labels[j]} ({weights[i, j]:.2f})" in sentence
    in_order = len(set(strongest)) > 1 and all(b >= a for a, b in zip(strongest, strongest[1:]))
    assert ("happens to look like a word alignment" in sentence) == in_order
    assert (f"coincidence of seed {seed}'s random weights" in sentence) == in_order
    assert ("follows no translation" in sentence) == (not in_order)


@pytest.mark.parametrize("tgt", ["le chat s'est assis", "un", "le chat le chien"])
def test_the_decoder_reads_the_target_shifted_right_and_each_row_says_what_it_predicts(tgt):
    """The decoder's input is <s> and the target without its last word; the page says which word each row predicts,
    and changing the last target word changes no map (no row reads it)."""
    words = tgt.split()
    at = run_page(PAGE, tgt=tgt)
    assert not at.exception
    _, dec, cross = assert_matches_core(at, SRC, words)
    assert dec.shape == (len(words),) * 2 and cross.shape == (len(words), len(SRC))
    inputs = ["<s>", *words[:-1]]
    text = " ".join(m.value for m in at.markdown)
    assert f"shifted right by one, “{' '.join(inputs)}”" in text
    assert ", ".join(f"*{a}* → *{b}*" for a, b in zip(inputs, words, strict=True)) in text
    at.text_input(key="tgt").set_value(" ".join([*words[:-1], "fin"])).run()
    np.testing.assert_array_equal(maps(at)[2], cross)  # the last word is predicted, never read


# ------------------------------------------------------------------- what the shared tests know of this page

def cross_expected(p) -> tuple[np.ndarray, ...]:
    r = encoder_decoder_attention(p["src"].split(), shifted_right(p["tgt"].split()), d_model=p["d_model"],
                                  seed=p["seed"])
    return r.encoder.weights, r.decoder.weights, r.cross.weights


HERE = "tests/pages/test_cross_attention.py::"
SHARED = PageTests(
    probe=Probe(dict(src="the cat sat on the mat", tgt="le chat s'est assis", seed=0, d_model=16), maps,
                cross_expected),
    valid=[Case("cross_attention", {"src": "the dog barked", "tgt": "le chien", "present": "true"},
                {"src": "the dog barked", "tgt": "le chien", "present": True})],
    malformed=[Case("cross_attention", {"seed": "100", "d_model": "17", "present": "maybe"},
                    {"seed": 0, "d_model": 16, "present": False})],
    elsewhere={**{(key, VALID): (HERE + "test_slider_extremes",) for key in ("seed", "d_model")},
               **{(key, MALFORMED): (HERE + "test_empty_sentence_in_the_url_shows_an_error",
                                     HERE + "test_too_many_tokens_shows_an_error") for key in ("src", "tgt")}},
    data_step=("seed", (0, 1)),
    canvas=True,
    concept=True,
    quiz=Quiz("cross_rows", "target (decoder) words"),
    click=lambda at: click_cell(at, CLICK_KEY, 3, 5),
)
