"""Worked-example page: stage-by-stage reveal, own input from the link, bad input, sharing, presenter mode."""

import numpy as np
import pytest

from core import LESSON_TOKENS, LESSON_X, worked_example
from core.designed_weights import PRESETS, designed_example
from core.user_input import format_matrix
from tests.helpers import lesson_values as lesson
from tests.helpers.apptest import chart_specs, heatmap_tooltips, heatmaps, run_page, section_titles, share_link
from tests.helpers.clicks import click_cell
from tests.helpers.registry import MALFORMED, VALID, Case, PageTests, Probe
from ui.charts.spec import drawn_on_canvas, view_title

PAGE = None  # the worked example is the landing page
OWN = "own_input"  # session-state key of its own-input expander (app_pages/worked_example.py)



def test_reveal_from_the_link_shows_only_the_first_stages():
    at = run_page(PAGE, reveal="raw scores")
    assert not at.exception
    assert section_titles(at) == ["1 · Embeddings X", "2 · Queries, keys and values", "3 · Raw scores"]
    assert "attention weights A" not in heatmaps(at)


def test_next_and_previous_step_through_the_stages():
    at = run_page(PAGE, reveal="X")
    assert section_titles(at) == ["1 · Embeddings X"]
    at.button(key="reveal_next").click().run()
    assert at.select_slider(key="reveal").value == "Q, K, V" and len(section_titles(at)) == 2
    for _ in range(10):  # clicking past the end stays on the last stage
        at.button(key="reveal_next").click().run()
    assert at.select_slider(key="reveal").value == "output"
    assert "Cross-check with PyTorch" in section_titles(at)
    at.button(key="reveal_prev").click().run()
    assert at.select_slider(key="reveal").value == "softmax" and "6 · Output: a weighted blend of the values" \
        not in section_titles(at)


def test_every_control_round_trips_through_the_link():
    query = dict(seed="5", reveal="softmax", present="true")
    at = run_page(PAGE, **query)
    assert at.slider(key="seed").value == 5 and at.select_slider(key="reveal").value == "softmax"
    assert at.toggle(key="present").value is True
    link = share_link(at)
    for key, value in query.items():
        assert f"{key}={value}" in link
    np.testing.assert_allclose(heatmaps(at)["attention weights A"], worked_example(5).weights)


def test_own_tokens_and_matrix_from_the_link():
    X = np.array([[1.0, 0.5], [0.0, -1.0], [2.0, 0.25], [0.5, 0.5]])
    at = run_page(PAGE, tokens="a b c a", X=format_matrix(X), token="c")
    assert not at.exception and not at.error
    maps = heatmaps(at)
    expected = worked_example(0, X=X, tokens=("a", "b", "c", "a"))
    np.testing.assert_allclose(maps["attention weights A"], expected.weights)
    assert maps["attention weights A"].shape == (4, 4)  # the repeated "a" keeps its own row
    assert "tokens=a+b+c+a" in share_link(at)


def editor_table(at) -> tuple[list[str], np.ndarray] | None:
    """The own-input table the page sent (tokens, X), or None when it sent none."""
    if not at.dataframe:
        return None
    table = at.dataframe[0].value
    return table["token"].tolist(), table.drop(columns="token").astype(float).to_numpy()


def test_the_own_input_table_is_sent_only_while_its_expander_is_open():
    """A closed expander's table would still be sent, and the browser would load and draw its data editor."""
    at = run_page(PAGE)
    assert not at.exception and editor_table(at) is None
    assert any(e.label == "Use your own tokens and embeddings" for e in at.expander)
    at.session_state[OWN] = True
    at.run()
    tokens, X = editor_table(at)
    assert tokens == list(LESSON_TOKENS)
    np.testing.assert_array_equal(X, LESSON_X)


def test_a_link_with_its_own_input_opens_the_table_and_closing_it_keeps_that_input():
    X = np.array([[1.0, 0.5], [0.0, -1.0], [2.0, 0.25]])
    at = run_page(PAGE, tokens="a b c", X=format_matrix(X))
    tokens, shown = editor_table(at)
    assert tokens == ["a", "b", "c"]
    np.testing.assert_array_equal(shown, X)
    at.session_state[OWN] = False
    at.run()
    assert not at.exception and editor_table(at) is None
    np.testing.assert_array_equal(heatmaps(at)["X"], X)
    assert at.query_params["tokens"] == "a b c" and at.query_params["X"] == format_matrix(X)
    at.session_state[OWN] = True
    at.run()
    tokens, shown = editor_table(at)
    assert tokens == ["a", "b", "c"]
    np.testing.assert_array_equal(shown, X)


@pytest.mark.parametrize(
    "query, message",
    [
        (dict(X="1,0;0,abc;1,1"), "not a number"),
        (dict(X="1,0;0,nan;1,1"), "NaN"),
        (dict(X="1,0;0,inf;1,1"), "infinite"),
        (dict(X="1,0;0,1,2;1,1"), "rectangular"),
        (dict(X="1,0;;1,1"), "is empty"),
        (dict(tokens="a b", X="1,0;0,1;1,1"), "2 tokens but X has 3 rows"),
        (dict(tokens=" ".join(["w"] * 9), X=";".join(["1"] * 9)), "more than 8"),
        (dict(tokens="x" * 10_000), "tokens but X has"),
        (dict(X="1," * 3000), "at most 2000"),
    ],
)
def test_bad_input_in_the_link_shows_a_message_and_the_lesson(query, message):
    at = run_page(PAGE, **query)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    np.testing.assert_array_equal(np.round(heatmaps(at)["attention weights A"], 3), lesson.WEIGHTS)


@pytest.mark.parametrize("query", [dict(seed="abc"), dict(reveal="step 9"), dict(token="dog"), dict(present="maybe")])
def test_malformed_controls_fall_back_with_a_visible_notice(query):
    at = run_page(PAGE, **query)
    assert not at.exception
    (key,) = query
    assert any(f"`{key}`" in i.value for i in at.info), [i.value for i in at.info]


def test_tooltips_carry_the_arithmetic():
    """Hovering a weight shows the lesson's steps, and the numbers it shows give the lesson's weights."""
    at = run_page(PAGE)

    views = {v.get("title"): (v, frames) for spec, frames in chart_specs(at) for v in spec.get("hconcat", [spec])}
    titles = {t["title"] for v, _ in views.values() for t in v.get("encoding", {}).get("tooltip", [])}
    assert {"raw score q_i · k_j", "scaled score q_i · k_j / √4", "exp(scaled)", "row sum of exp",
            "A_ij = exp / row sum", "Σ_j A_ij · V_jd", "q_i · k_j"} <= titles
    tips = heatmap_tooltips(at, "attention weights A")
    shown = [float(text.rsplit("= ", 1)[1]) for text in tips["A_ij = exp / row sum"].ravel()]
    np.testing.assert_array_equal(np.round(np.reshape(shown, (3, 3)), 3), lesson.WEIGHTS)
    np.testing.assert_array_equal(np.round(tips["raw score q_i · k_j"].astype(float), 3), lesson.RAW_SCORES)



def test_predict_then_reveal_asks_before_it_tells():
    at = run_page(PAGE)
    quiz = at.radio(key="quiz_worked_focus_choice")
    assert quiz.value is None and "cat" in quiz.label
    assert not at.success and not at.warning
    quiz.set_value("sat").run()
    at.button(key="quiz_worked_focus_reveal").click().run()
    assert not at.exception
    # computed: "cat" puts 0.486 on "sat" in the lesson's numbers
    assert any("sat" in s.value for s in at.success), [s.value for s in at.success]


@pytest.mark.parametrize("present", ["false", "true"])
def test_each_section_is_one_element_and_presenter_mode_drops_its_explanation(present):
    """Heading, explanation and formula travel as one Markdown element; on a projector only the first and last."""
    at = run_page(PAGE, present=present)
    sections = [m.value for m in at.main.markdown if m.value.startswith("## ")]  # not the sidebar's page list
    assert len(sections) == len(section_titles(at)) == 7  # six stages and the PyTorch cross-check
    first = sections[0]
    assert first.startswith("## 1 · Embeddings X\n\n")
    assert r"T = 3,\ d_{model} = 4" in first and first.endswith("\n$$")  # the formula, computed from X
    assert ("One row per token" in first) is (present == "false")
    assert not at.header and not any(r"\frac{Q K^\top}{\sqrt{d_k}}" in m.value for m in at.latex)


def test_a_clicked_cell_rebuilds_only_the_projections(monkeypatch):
    """Each chart is built by its own cached call: a click only highlights rows of Q and K, so only the grid of
    W_q, W_k, W_v, Q, K and V (six heatmaps) is built again; the other charts come from the cache."""
    import ui.charts.worked_example
    from tests.helpers.clicks import click_cell
    from ui.cache import clear_shared_caches

    clear_shared_caches()
    at = run_page(PAGE, seed="7")
    built: list[str] = []
    heatmap_part = ui.charts.worked_example.heatmap_part

    def counting_heatmap(matrix, **kwargs):
        built.append(kwargs.get("title", ""))
        return heatmap_part(matrix, **kwargs)

    monkeypatch.setattr(ui.charts.worked_example, "heatmap_part", counting_heatmap)
    at = click_cell(at, "cell", 1, 2)
    assert not at.exception
    assert sorted(built) == ["K", "Q", "V", "W_k", "W_q", "W_v"]


def test_every_chart_but_the_output_is_drawn_on_a_canvas_without_aria():
    """Canvases repaint faster than SVG updates its cells; the output keeps its numbers in the page as SVG text."""
    drawn = {}
    for spec, frames in chart_specs(run_page(PAGE)):
        views = spec.get("hconcat") or spec.get("concat") or [spec]
        drawn[view_title(views[0], frames)] = (drawn_on_canvas(spec), spec.get("config", {}).get("aria", True))
    assert drawn == {"X": (True, False), "W_q": (True, False), "raw scores Q Kᵀ": (True, False),
                     "attention weights A": (True, False), "output = A V": (False, True)}


def test_the_designed_weights_say_what_each_query_asks_for_with_the_numbers_on_screen():
    """?weights=designed: the designed head's maps, and a sentence per query whose numbers are the weights drawn; no
    seed slider nor own-input table, which would change nothing."""
    import re

    from core.designed_weights import LOOKS_FOR, SENTENCE, SENTENCE_KINDS, designed_example

    at = run_page(PAGE, weights="designed")
    assert not at.exception
    ex = designed_example()
    np.testing.assert_allclose(heatmaps(at)["attention weights A"], ex.weights, atol=1e-12)
    assert [s.key for s in at.slider] == [] and not any(e.label.startswith("Use your own") for e in at.expander)
    assert "three tokens" not in at.title[0].value  # eight here, and any number with one's own input
    assert any("designed by hand" in m.value for m in at.markdown)
    (claims,) = [m.value for m in at.markdown if m.value.startswith("- ")]
    for line in claims.splitlines():
        asks = re.match(r"- “(\w+)” \((\w+)\) looks for an? (\w+): its largest weight, ([\d.]+), is on “(\w+)”, and "
                        r"([\d.]+) of its attention", line)
        if asks is None:
            assert "look for nothing" in line and "each 0.12 (1/8 = 0.12)" in line
            continue
        word, kind, wanted, largest, on, share = asks.groups()
        i = SENTENCE.index(word)
        assert SENTENCE_KINDS[i] == kind and LOOKS_FOR[kind] == wanted
        assert SENTENCE[int(np.argmax(ex.weights[i]))] == on and float(largest) == pytest.approx(ex.weights[i].max(),
                                                                                                  abs=5e-3)
        targets = [j for j, k in enumerate(SENTENCE_KINDS) if k == wanted]
        assert float(share) == pytest.approx(ex.weights[i, targets].sum(), abs=5e-3)
    it = ex.weights[SENTENCE.index("it")]
    assert f"“it” (pronoun) looks for a noun: its largest weight, {it.max():.2f}, is on “cat”" in claims
    at = run_page(PAGE)  # the lesson's random weights stay the default
    assert at.radio(key="weights").value == "random" and at.slider(key="seed").value == 0


def test_the_previous_word_preset_says_where_each_word_looks_with_the_numbers_on_screen():
    """?weights=previous word: the preset's maps, its recipe from its positions, and the claim "every word after the
    first puts its largest weight on the word just before it" with the range of those weights as drawn."""
    from core.designed_weights import PREVIOUS_WORD

    at = run_page(PAGE, weights="previous word")
    assert not at.exception and at.radio(key="weights").value == "previous word"
    ex = designed_example(PREVIOUS_WORD)
    shown = heatmaps(at)["attention weights A"]
    np.testing.assert_allclose(shown, ex.weights, atol=1e-12)
    assert [s.key for s in at.slider] == []
    text = "\n".join(m.value for m in at.markdown)
    assert "position 0 to position 7" in text and "position 1 for position 0" in text
    before = np.array([shown[i, i - 1] for i in range(1, len(shown))])
    assert all(int(np.argmax(shown[i])) == i - 1 for i in range(1, len(shown)))  # what the claim says, on the map
    low, high = f"{before.min():.2f}", f"{before.max():.2f}"
    claim = ("Every word after the first puts its largest weight on the word just before it: "
             + (f"{low} each" if low == high else f"from {low} to {high}"))
    assert claim in text
    assert "“the” (position 0) looks for nothing" in text
    assert f"each {1 / len(shown):.2f}" in text
    assert r"p_j = p_i - 1" in text  # the section's formula
    assert "blend of the positions it attended to" in text and "√d_k = √8 ≈ 2.83 keeps" in text


# ------------------------------------------------------------------- what the shared tests know of this page

STAGES = ["X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output"]


def worked_example_shown(at) -> dict:
    # the "own input" data editor: sent only while its expander is open, which a link with its own input opens
    editors = [df.value for df in at.dataframe if df.proto.editing_mode]
    table = (tuple(editors[0]["token"]), editors[0].drop(columns="token").to_numpy(float)) if editors else None
    maps = heatmaps(at)
    torch_check = [float(m.value) for m in at.metric if m.label.startswith("max |NumPy − PyTorch|")]
    return {"own-input table": table, "X": maps["X"],
            "stages shown": len(section_titles(at)), "weights": maps.get("attention weights A"),
            "PyTorch agrees to float32": torch_check[0] < 1e-6 if torch_check else None}


def worked_example_expected(p) -> dict:
    stage = STAGES.index(p["reveal"])
    if p["weights"] in PRESETS:  # its own sentence and embeddings, and no own-input table
        ex = designed_example(PRESETS[p["weights"]])
        own, X = False, ex.X
    else:
        ex = worked_example(p["seed"], X=p["X"], tokens=p["tokens"])
        own, X = tuple(p["tokens"]) != LESSON_TOKENS or not np.array_equal(p["X"], LESSON_X), p["X"]
    return {"own-input table": (tuple(p["tokens"]), np.asarray(p["X"], float)) if own else None, "X": X,
            # the last stage adds the PyTorch check; the designed weights, from the softmax on, what each query asks
            "stages shown": stage + 1 + (stage == len(STAGES) - 1)
            + (p["weights"] in PRESETS and stage >= STAGES.index("softmax")),
            "weights": ex.weights if stage >= STAGES.index("softmax") else None,
            "PyTorch agrees to float32": True if p["check"] and stage == len(STAGES) - 1 else None}


HERE = "tests/pages/test_worked_example.py::"
SHARED = PageTests(
    probe=Probe(dict(seed=0, reveal="output", check=False, tokens=LESSON_TOKENS, X=LESSON_X, weights="random"),
                worked_example_shown, worked_example_expected),
    # tokens and X are not widgets: the link fills the "own input" table (st.data_editor) and every matrix
    valid=[Case("worked_example", {"tokens": "a b c", "check": "true", "present": "true"},
                {"check": True, "present": True}, uses={"tokens": ("a", "b", "c")}),
           Case("worked_example", {"X": "1,0;0,1;1,1"}, uses={"X": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])}),
           Case("worked_example", {"weights": "designed", "reveal": "softmax"},
                {"weights": "designed", "reveal": "softmax"}),
           Case("worked_example", {"weights": "previous word"}, {"weights": "previous word"})],
    malformed=[Case("worked_example", {"reveal": "7", "check": "maybe", "present": "1"},  # 7: the old numeric form
                    {"reveal": "output", "check": False, "present": False}),
               Case("worked_example", {"weights": "trained"}, {"weights": "random"}),
               Case("worked_example", {"weights": "previous"}, {"weights": "random"})],
    elsewhere={
        ("seed", VALID): ("tests/test_streamlit_app.py::test_seed_from_the_url_is_restored",),
        ("seed", MALFORMED): ("tests/test_streamlit_app.py::test_malformed_seed_falls_back_to_the_default",
                              HERE + "test_malformed_controls_fall_back_with_a_visible_notice"),
        ("reveal", VALID): (HERE + "test_every_control_round_trips_through_the_link",
                            HERE + "test_reveal_from_the_link_shows_only_the_first_stages"),
        ("token", VALID): ("tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",),
        ("token", MALFORMED): ("tests/test_streamlit_app.py::test_token_selector_explains_that_tokens_output",
                               HERE + "test_malformed_controls_fall_back_with_a_visible_notice"),
        ("tokens", MALFORMED): (HERE + "test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
        ("X", MALFORMED): (HERE + "test_bad_input_in_the_link_shows_a_message_and_the_lesson",),
    },
    data_step=("seed", (0, 1)),
    concept=True,
    click=lambda at: click_cell(at, "cell", 1, 2),
    structural={"reveal": "steps through the stages: each step adds or removes a whole section"},
)
