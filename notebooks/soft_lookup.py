"""The soft lookup's notebook: the fruit dictionary queried the hard way and the soft way, at the view's τ."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import SOFTMAX, Notebook

TITLE = "Attention as a soft lookup"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The query's name and the softmax temperature τ."""
    return {"query": str(state["query"]), "temperature": float(state["temp"])}


def cells(nb: Notebook) -> None:
    nb.md("""
A Python dictionary answers `prices["lemon"]` by finding the one key equal to the query and handing back its value;
anything else is a `KeyError`. Attention plays the same game with vectors. The query is compared with **every** key
by a dot product, and instead of one value it returns a **blend of all the values**, weighted by a softmax of those
similarities.

## The tiny dictionary

Five fruits, each **key** a 2-vector saying how *sweet* and how *sour* it is, each **value** its price (EUR/kg).
A query is a vector of what you are after.
""")
    nb.code("""
fruits = ["banana", "grape", "pineapple", "lemon", "cranberry"]
keys = np.array([[0.90, 0.10], [0.70, 0.30], [0.60, 0.70], [0.10, 0.95], [0.20, 0.80]])  # (N, 2): sweet, sour
values = np.array([1.8, 4.5, 3.2, 2.6, 9.0])  # (N,): price in EUR per kg
queries = {"sweet": [1.0, 0.0], "sour": [0.0, 1.0], "sweet and sour": [0.7, 0.7], "very sweet": [2.0, 0.0]}
q = np.array(queries[query])  # (2,)
print(f"query {query!r}: q = {q}")
print(pd.DataFrame(keys, index=fruits, columns=["sweet", "sour"]).assign(price=values))
""")
    nb.md(r"""
## 1 · Hard lookup versus soft lookup

The hard lookup keeps only the best-matching key; the soft lookup gives every key a share.

$$\text{hard: } j^\star = \arg\max_j\; q\cdot k_j,\quad \text{result} = v_{j^\star}
\qquad
\text{soft: } w = \operatorname{softmax}\!\Big(\frac{q\,K^\top}{\tau}\Big),\quad \text{result} = \sum_j w_j\, v_j$$
""")
    nb.code(SOFTMAX + """
scores = keys @ q  # (N, 2) @ (2,) -> (N,): q . k_j
hard_weights = np.zeros_like(scores)
hard_weights[np.argmax(scores)] = 1.0  # one-hot on the best key
hard_result = hard_weights @ values
soft_weights = softmax(scores / temperature)  # (N,), sums to 1
soft_result = soft_weights @ values  # (N,) @ (N,) -> ()
print("scores q . k:", scores)
print(f"hard result: {fruits[np.argmax(scores)]}, {hard_result:.2f}")
print(f"soft weights at tau = {temperature:g}:", soft_weights)
print(f"soft result: {soft_result:.4f}   |soft - hard| = {abs(soft_result - hard_result):.3g}")
""")
    nb.md("""
## The numbers

Each score is a dot product: large when the fruit offers a lot of what the query asks for. Dividing by τ and taking
the softmax turns the scores into weights that sum to 1; the soft result is the last column summed.
""")
    nb.code("""
weighted_values = soft_weights * values  # (N,): w_j v_j, which sum to the soft result
table = pd.DataFrame({"score q.k": scores, "score / tau": scores / temperature, "soft weight w": soft_weights,
                      "hard weight": hard_weights, "value v": values, "w . v": weighted_values}, index=fruits)
print(table.round(4))
print(f"sum of the weights: {soft_weights.sum():.6f}; sum of w . v: {weighted_values.sum():.4f} = the soft result")
""")
    nb.code("""
points = pd.DataFrame({"fruit": fruits, "sweet": keys[:, 0], "sour": keys[:, 1], "soft weight": soft_weights})
keys_chart = alt.Chart(points, title=f"keys sized by their soft weight (tau = {temperature:g})").mark_circle().encode(
    x="sweet:Q", y="sour:Q", size=alt.Size("soft weight:Q", scale=alt.Scale(domain=[0, 1])),
    color=alt.Color("soft weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1])), tooltip=list(points.columns))
bars = pd.DataFrame({"fruit": fruits * 2, "weight": np.concatenate([hard_weights, soft_weights]),
                     "lookup": ["hard"] * len(fruits) + ["soft"] * len(fruits)})
weights_chart = alt.Chart(bars, title="hard and soft weights").mark_bar().encode(
    x=alt.X("fruit:N", sort=None), xOffset="lookup:N", y="weight:Q", color="lookup:N", tooltip=list(bars.columns))
keys_chart | weights_chart
""")
    nb.md(r"""
## 2 · Turn the temperature down, and up

As τ shrinks, the gaps between the scores are magnified before the softmax, so the best key's weight tends to 1 and
the soft result slides onto the hard one. As τ grows, every weight tends to 1/N and the result becomes the plain
average of the values. Scaled dot-product attention is this soft lookup with a fixed temperature τ = √d_k.
""")
    nb.code("""
sweep_temperatures = np.geomspace(0.01, 10.0, 121)  # the page's sweep, from 0.01 to 10
sweep_weights = softmax(scores[None, :] / sweep_temperatures[:, None], axis=-1)  # (n_temps, N)
sweep_results = sweep_weights @ values  # (n_temps, N) @ (N,) -> (n_temps,)
print(f"coldest (tau = {sweep_temperatures[0]:g}): {sweep_results[0]:.4f}   hard: {hard_result:.4f}")
print(f"hottest (tau = {sweep_temperatures[-1]:g}): {sweep_results[-1]:.4f}   average: {values.mean():.4f}")
sweep = pd.DataFrame({"temperature": sweep_temperatures, "soft result": sweep_results})
alt.Chart(sweep, title="soft result against the temperature").mark_line().encode(
    x=alt.X("temperature:Q", scale=alt.Scale(type="log")), y="soft result:Q")
""")
