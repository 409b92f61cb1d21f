"""Attention as a soft lookup: a tiny dictionary, queried the hard way and the soft way."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.attention import softmax
from core.lookup import (
    LookupComparison,
    TinyDictionary,
    compare_lookups,
    fruit_dictionary,
    hard_lookup,
    similarity_scores,
    soft_lookup,
)
from ui.cache import shared_cache
from ui.chart_names import ChartName
from ui.charts import soft_lookup as charts
from ui.display import show_chart
from ui.layout import controls_row, explain, introduction, page_fragment, show_source, static_table
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_choice, bound_select_slider
from ui.wording.soft_lookup import sweep_ends, temperature_limits

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"temp": "0.05"}

#: Temperatures on the slider: a 1-2-5 ladder, so the log scale is covered evenly.
TEMPERATURES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
DEFAULT_TEMPERATURE = 0.2
#: The fine grid of the temperature sweep chart, spanning the slider's range.
SWEEP_TEMPERATURES = np.geomspace(TEMPERATURES[0], TEMPERATURES[-1], 121)


@shared_cache(64)
def chart_specs(query_name: str, temperature: float, _lookup: LookupComparison) -> dict[str, dict]:
    """The page's charts, built once per (query, temperature), the cache key; `_lookup` is its result."""
    return charts.page_specs(fruit_dictionary(), query_name, _lookup)


introduction(
    "Attention as a soft lookup",
    "A Python dictionary answers `prices[\"lemon\"]` by finding the one key equal to the query and handing "
    "back its value; anything else is a `KeyError`. Attention plays the same game with vectors. The query "
    "is compared with **every** key by a dot product, and instead of one value it returns a **blend of all "
    "the values**, weighted by a softmax of those similarities. Nothing is ever \"not found\", and because "
    "the blend changes smoothly with the query and the keys, gradients can flow through it: that is what "
    "makes the lookup learnable.",
)


@page_fragment
def page_body() -> None:
    shop = fruit_dictionary()
    dictionary_text(shop)
    query_name, temperature = lookup_controls(shop)
    offer_notebook("soft_lookup", query=query_name, temp=temperature)
    lookup = compare_lookups(shop.queries[query_name], shop.keys, shop.values, temperature, SWEEP_TEMPERATURES)
    specs = chart_specs(query_name, temperature, lookup)
    hard_versus_soft_section(shop, query_name, lookup, specs)
    numbers_table(shop, lookup)
    temperature_section(shop, lookup, specs)
    show_source(similarity_scores, hard_lookup, soft_lookup, softmax)


def dictionary_text(shop: TinyDictionary) -> None:
    """What the tiny dictionary holds: its keys, values and queries."""
    st.markdown(
        f"Here is a tiny dictionary: {len(shop.key_names)} fruits, each **key** a 2-vector saying how "
        f"*{shop.key_dims[0]}* and how *{shop.key_dims[1]}* it is, each **value** its {shop.value_name}. "
        "A query is a vector of what you are after."
    )


def lookup_controls(shop: TinyDictionary) -> tuple[str, float]:
    """The query (one of the dictionary's) and the softmax temperature τ."""
    with controls_row():
        query_name = bound_choice(
            "Query", "query", list(shop.queries), default=next(iter(shop.queries)),
            help="What you are looking for, as a (sweet, sour) vector. 'very sweet' points the same way as "
                 "'sweet' but is twice as long.",
        )
        temperature = bound_select_slider(
            "Temperature τ", "temp", TEMPERATURES, DEFAULT_TEMPERATURE, format_func=lambda t: f"{t:g}",
            help="Divides the scores before the softmax. Small τ: sharp, almost a hard lookup. "
                 "Large τ: every key gets about the same weight.",
        )
    return query_name, temperature


def hard_versus_soft_section(shop: TinyDictionary, query_name: str, lookup: LookupComparison,
                             specs: dict[str, dict]) -> None:
    """Section 1: both lookups' formulas and results, and the keys drawn with their weights."""
    names = list(shop.key_names)
    hard_result, soft_result, soft_w = lookup.hard_result, lookup.soft_result, lookup.soft_weights
    best = int(np.argmax(lookup.hard_weights))
    gap = abs(soft_result - hard_result)

    st.header("1 · Hard lookup versus soft lookup")
    st.latex(
        r"\begin{gathered}"
        r"\text{hard: } j^\star = \arg\max_j\; q\cdot k_j,\quad \text{result} = v_{j^\star}"
        r"\\[4pt]"
        r"\text{soft: } w = \operatorname{softmax}\!\Big(\frac{q\,K^\top}{\tau}\Big),\quad"
        r"\text{result} = \sum_j w_j\, v_j"
        r"\end{gathered}"
    )
    q_vec = ", ".join(f"{x:g}" for x in shop.queries[query_name])
    st.markdown(
        f"The query **{query_name}** is q = ({q_vec}). The hard lookup keeps only the best-matching key, "
        f"**{names[best]}**; the soft lookup gives every key a share. The bigger and brighter a fruit below, "
        "the more of its value ends up in the answer."
    )
    with st.container(horizontal=True):
        st.metric(f"hard result: {names[best]}", f"{float(hard_result):.2f}",
                  help=f"The value ({shop.value_name}) of the key with the highest score q·k.")
        st.metric("soft result", f"{float(soft_result):.4f}",
                  help="The softmax-weighted average of all the values at this temperature.")
        st.metric("|soft − hard|", f"{gap:.3g}", help="How far the soft answer is from the hard one.")
        st.metric("largest soft weight", f"{float(soft_w.max()):.4f}",
                  help="1 means the softmax has become a hard lookup; 1/N means it is uniform.")

    show_chart(
        specs["lookup"],
        alt=ChartName(f"The {len(names)} keys as points sized by their weight with the query as an arrow; bar chart "
                      "of hard and soft weights",
                      f"The hard lookup puts 1 on '{names[best]}'; the soft one puts {float(soft_w.max()):.2f} on "
                      f"'{names[int(np.argmax(soft_w))]}' at temperature {lookup.temperature:g}."),
    )


def numbers_table(shop: TinyDictionary, lookup: LookupComparison) -> None:
    """Section 1's numbers: every key's score, weight and share of the result, in one table."""
    soft_w = lookup.soft_weights
    st.subheader("The numbers")
    explain(
        "Each score is a dot product: large when the fruit offers a lot of what the query asks for. "
        "Dividing by τ and taking the softmax turns the scores into weights that sum to 1; the soft result "
        "is the last column summed."
    )
    static_table({
        "key": list(shop.key_names),
        f"k ({', '.join(shop.key_dims)})": [", ".join(f"{x:.2f}" for x in k) for k in shop.keys],
        "score q·k": lookup.scores,
        "score / τ": lookup.scaled_scores,
        "soft weight w": soft_w,
        "hard weight": lookup.hard_weights,
        f"value v ({shop.value_name})": shop.values,
        "w · v": lookup.weighted_values,
    }, formats={
        "score q·k": "{:.3f}", "score / τ": "{:.2f}", "soft weight w": "{:.4f}", "hard weight": "{:.0f}",
        f"value v ({shop.value_name})": "{:.2f}", "w · v": "{:.4f}",
    })
    st.caption(
        f"Sum of the weights: {float(soft_w.sum()):.6f}. Sum of w · v: {float(lookup.weighted_values.sum()):.4f} "
        "= the soft result."
    )


def temperature_section(shop: TinyDictionary, lookup: LookupComparison, specs: dict[str, dict]) -> None:
    """Section 2: the result and the weights over the whole temperature range, and where a cold softmax lands."""
    hard_result = lookup.hard_result
    uniform = float(shop.values.mean())
    st.header("2 · Turn the temperature down, and up")
    explain(temperature_limits(lookup, shop.values) + " A longer query has the same effect as a lower temperature: "
            "compare *sweet* with *very sweet*.")
    sweep_results = lookup.sweep_results
    show_chart(
        specs["sweep"],
        alt=ChartName(f"The soft result and each key's weight plotted against the temperature, from "
                      f"{lookup.sweep_temperatures.min():g} to {lookup.sweep_temperatures.max():g}",
                      sweep_ends(lookup)),
    )
    d_k = shop.keys.shape[1]
    st.info(
        f"Scaled dot-product attention is this soft lookup with a fixed temperature τ = √d_k (here √{d_k} ≈ "
        f"{np.sqrt(d_k):.2f}). The next page shows why that particular temperature is the right one: without "
        "it, wide keys make the softmax behave like the hard lookup, and a hard lookup has no gradient.",
        icon=":material/lightbulb:",
    )

    coldest = int(np.argmin(SWEEP_TEMPERATURES))
    candidates = {"the hard lookup's value": float(hard_result), "the average of all values": uniform, "zero": 0.0}
    landing = min(candidates, key=lambda name: abs(float(sweep_results[coldest]) - candidates[name]))
    predict_then_reveal(
        "Turn the temperature all the way down. The soft result becomes…", list(candidates), landing,
        f"At τ = {SWEEP_TEMPERATURES[coldest]:g} the soft result is {float(sweep_results[coldest]):.4f}; "
        f"the hard lookup returns {float(hard_result):.4f} and the average is {uniform:.4f}. "
        "A cold softmax puts all its weight on the best-matching key.",
        key="soft_lookup_cold",
    )


page_body()
