"""The soft-lookup page, run headless: defaults, both temperature extremes, the query choice."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.lookup import fruit_dictionary, hard_lookup, soft_lookup, temperature_sweep
from tests.helpers.apptest import chart_specs, markdown_tables, run_page
from tests.helpers.registry import Case, PageTests, Probe, Quiz

PAGE = "app_pages/soft_lookup.py"
SHOP = fruit_dictionary()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def soft_weights_on_page(at: AppTest) -> np.ndarray:
    """The soft bars of the hard-vs-soft weights chart."""
    for spec, frames in chart_specs(at):
        for sub in spec.get("hconcat", [spec]):
            if "data" in sub and "xOffset" in sub.get("encoding", {}):
                df = frames[sub["data"]["name"]]
                return df[df["lookup"].str.startswith("soft")]["weight"].to_numpy()
    raise AssertionError("no hard-vs-soft weights chart on the page")


def test_defaults_show_the_lookup_computed_by_core():
    at = run_page(PAGE)
    assert not at.exception
    assert at.title[0].value == "Attention as a soft lookup"
    assert at.radio(key="query").value == "sweet" and at.select_slider(key="temp").value == 0.2
    m = metrics(at)
    soft, w = soft_lookup(SHOP.queries["sweet"], SHOP.keys, SHOP.values, 0.2)
    hard, _ = hard_lookup(SHOP.queries["sweet"], SHOP.keys, SHOP.values)
    assert m["hard result: banana"] == f"{float(hard):.2f}"
    assert float(m["soft result"]) == pytest.approx(float(soft), abs=1e-4)
    assert float(m["|soft − hard|"]) == pytest.approx(abs(float(soft) - float(hard)), rel=1e-2)
    np.testing.assert_allclose(soft_weights_on_page(at), w)
    (shown,) = markdown_tables(at)  # static text, not an interactive grid the browser redraws on every step
    assert list(shown["key"]) == list(SHOP.key_names)
    assert list(shown["soft weight w"]) == [f"{x:.4f}" for x in w]
    assert list(shown["hard weight"]) == ["1" if k == "banana" else "0" for k in SHOP.key_names]
    assert len(at.get("expander")) >= 1  # the source code


@pytest.mark.parametrize("query, winner", [("sweet", "banana"), ("sweet and sour", "pineapple")])
def test_lowest_temperature_is_the_hard_lookup(query, winner):
    at = run_page(PAGE, query=query, temp="0.01")
    assert not at.exception
    m = metrics(at)
    assert float(m["|soft − hard|"]) < 1e-4
    assert float(m["largest soft weight"]) > 0.9999
    assert float(m["soft result"]) == pytest.approx(float(m[f"hard result: {winner}"]), abs=1e-4)


def test_highest_temperature_is_nearly_uniform():
    at = run_page(PAGE, temp="10")
    assert not at.exception
    m = metrics(at)
    assert float(m["largest soft weight"]) < 0.22  # uniform would be 1/5
    assert float(m["soft result"]) == pytest.approx(SHOP.values.mean(), abs=0.1)
    assert np.ptp(soft_weights_on_page(at)) < 0.03


def test_moving_the_controls_updates_the_page():
    at = run_page(PAGE)
    at.radio(key="query").set_value("sour").run()
    at.select_slider(key="temp").set_value(1.0).run()
    assert not at.exception
    _, w = soft_lookup(SHOP.queries["sour"], SHOP.keys, SHOP.values, 1.0)
    np.testing.assert_allclose(soft_weights_on_page(at), w)
    assert "hard result: lemon" in metrics(at)
    # a bad URL value falls back to the default instead of failing
    at = run_page(PAGE, query="bitter", temp="0.03")
    assert not at.exception
    assert at.radio(key="query").value == "sweet" and at.select_slider(key="temp").value == 0.2


def texts(at: AppTest) -> list[str]:
    """Every paragraph and caption of the page."""
    return [el.value for el in [*at.markdown, *at.caption]]


NUMBER = r"(-?\d+(?:\.\d+)?)"


@pytest.mark.parametrize("query, temp", [("sweet", "0.2"), ("sour", "10"), ("sweet and sour", "0.01"),
                                         ("very sweet", "1")])
def test_the_temperature_sentences_quote_the_sweep_on_screen(query, temp):
    """The text and the chart's caption agree with the soft lookup at the slider's ends, whatever the settings:
    the plain average is the limit τ → ∞, not the value at the largest τ shown."""
    import re

    at = run_page(PAGE, query=query, temp=temp)
    assert not at.exception
    q = SHOP.queries[query]
    (cold, hot), _ = temperature_sweep(q, SHOP.keys, SHOP.values, np.array([0.01, 10.0]))
    hard, _ = hard_lookup(q, SHOP.keys, SHOP.values)
    (limits,) = [t for t in texts(at) if t.startswith("As τ shrinks")]
    found = re.search(rf"hard one \({NUMBER}; at τ = 0.01 it is {NUMBER}\).*average of the values, {NUMBER}, "
                      rf"reached only as τ → ∞: at τ = 10, the slider's largest, it is {NUMBER}, still {NUMBER} away",
                      limits)
    assert found, limits
    h, c, avg, h10, gap = map(float, found.groups())
    assert h == pytest.approx(float(hard), abs=0.005) and c == pytest.approx(cold, abs=0.005)
    assert avg == pytest.approx(SHOP.values.mean(), abs=0.005) and h10 == pytest.approx(hot, abs=0.005)
    assert gap == pytest.approx(abs(hot - SHOP.values.mean()), abs=0.006) and gap > 0
    (ends,) = [t for t in texts(at) if t.startswith("The result goes from")]
    assert ends == f"The result goes from {cold:.2f} at τ = 0.01 to {hot:.2f} at τ = 10."


# ------------------------------------------------------------------- what the shared tests know of this page


def lookup_shown(at: AppTest) -> dict[str, str]:
    return {k: v for k, v in metrics(at).items() if k in ("soft result", "largest soft weight")}


def lookup_expected(p) -> dict[str, str]:
    soft, w = soft_lookup(SHOP.queries[p["query"]], SHOP.keys, SHOP.values, p["temp"])
    return {"soft result": f"{float(soft):.4f}", "largest soft weight": f"{float(w.max()):.4f}"}


SHARED = PageTests(
    probe=Probe(dict(query="sweet", temp=0.2), lookup_shown, lookup_expected),
    valid=[Case("soft_lookup", {"query": "sour", "temp": "1", "present": "true"},  # "1": the app's form of 1.0
                {"query": "sour", "temp": 1.0, "present": True})],
    malformed=[Case("soft_lookup", {"query": "bitter", "temp": "0.03", "present": "maybe"},  # 0.03: between stops
                    {"query": "sweet", "temp": 0.2, "present": False})],
    data_step=("temp", (1, 2)),
    concept=True,
    quiz=Quiz("soft_lookup_cold", "the hard lookup's value"),
)
