r"""Attention as a soft dictionary lookup.

A Python ``dict`` answers a query by finding the one key that matches and
returning its value. Attention keeps the same three roles but softens both
steps: every key gets a similarity score with the query, and the answer is a
blend of *all* the values, weighted by a softmax of those scores.

.. math::

    \text{hard: } \; j^\star = \arg\max_j\, q \cdot k_j,\quad \text{result} = v_{j^\star}
    \qquad\qquad
    \text{soft: } \; w = \operatorname{softmax}\!\left(\frac{q K^\top}{\tau}\right),\quad \text{result} = w V

The temperature :math:`\tau` sets how sharp the blend is: as :math:`\tau \to 0`
the softmax puts all its weight on the best key (the hard lookup); as
:math:`\tau \to \infty` every key gets the same weight (the plain average).
Scaled dot-product attention is this soft lookup with :math:`\tau = \sqrt{d_k}`.

Shapes: one query ``q`` is ``(d_k,)``, the ``N`` keys ``K`` are ``(N, d_k)``, the
values ``V`` are ``(N,)`` (one number per key) or ``(N, d_v)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core._checks import as_float_array
from core.attention import softmax


@dataclass(frozen=True)
class TinyDictionary:
    """A small, fixed dictionary to look things up in (arrays are read-only).

    ``key_names[j]`` names key ``j``; ``keys`` is ``(N, d_k)`` with one feature per
    entry of ``key_dims``; ``values`` is ``(N,)``, in units of ``value_name``.
    ``queries`` maps a query's description to its ``(d_k,)`` vector.
    """

    key_names: tuple[str, ...]
    key_dims: tuple[str, ...]
    keys: np.ndarray
    values: np.ndarray
    value_name: str
    queries: dict[str, np.ndarray]


def fruit_dictionary() -> TinyDictionary:
    """Five fruits described by how sweet and how sour they are, each storing a price.

    A query is also a (sweet, sour) vector: "what am I looking for". Its dot
    product with a key is large when the fruit offers a lot of what the query asks
    for. The keys are spread so that every query's best key beats the runner-up
    by at least 0.15 in score, so the hard lookup is never a near-tie.
    """
    key_names = ("banana", "grape", "pineapple", "lemon", "cranberry")
    keys = np.array(
        [
            [0.90, 0.10],  # banana: sweet, hardly sour
            [0.70, 0.30],  # grape
            [0.60, 0.70],  # pineapple: sweet and sour
            [0.10, 0.95],  # lemon: sour
            [0.20, 0.80],  # cranberry
        ]
    )
    values = np.array([1.8, 4.5, 3.2, 2.6, 9.0])  # price in EUR per kg
    queries = {
        "sweet": np.array([1.0, 0.0]),
        "sour": np.array([0.0, 1.0]),
        "sweet and sour": np.array([0.7, 0.7]),
        "very sweet": np.array([2.0, 0.0]),  # same direction as "sweet", twice as long
    }
    for a in (keys, values, *queries.values()):
        a.setflags(write=False)
    return TinyDictionary(key_names=key_names, key_dims=("sweet", "sour"), keys=keys, values=values,
                          value_name="price (EUR/kg)", queries=queries)


def _check_lookup_inputs(query: object, keys: object, values: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = as_float_array(query, "query", min_ndim=1)
    k = as_float_array(keys, "keys", min_ndim=2)
    v = as_float_array(values, "values", min_ndim=1)
    if q.ndim != 1:
        raise ValueError(f"query must be one vector of shape (d_k,), got shape {q.shape}.")
    if k.ndim != 2 or k.shape[1] != q.shape[0]:
        raise ValueError(
            f"keys must have shape (N, d_k) with the query's d_k={q.shape[0]}: "
            f"query has shape {q.shape}, keys have shape {k.shape}."
        )
    if v.ndim > 2 or v.shape[0] != k.shape[0]:
        raise ValueError(
            f"values must have shape (N,) or (N, d_v), one value per key: keys have shape {k.shape}, "
            f"values have shape {v.shape}."
        )
    return q, k, v


def similarity_scores(query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    r"""Dot-product similarity of one query with every key: :math:`s_j = q \cdot k_j`.

    ``query`` ``(d_k,)``, ``keys`` ``(N, d_k)`` -> scores ``(N,)``.
    """
    q = as_float_array(query, "query", min_ndim=1)
    k = as_float_array(keys, "keys", min_ndim=2)
    if q.ndim != 1 or k.ndim != 2 or k.shape[1] != q.shape[0]:
        raise ValueError(f"need query (d_k,) and keys (N, d_k); got query {q.shape} and keys {k.shape}.")
    return k @ q  # (N, d_k) @ (d_k,) -> (N,)


def hard_lookup(query: np.ndarray, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""A dictionary lookup by best match: return the value of the most similar key.

    .. math:: j^\star = \arg\max_j\, q \cdot k_j,\qquad \text{result} = v_{j^\star}

    Returns ``(result, weights)``: ``result`` is ``values[j*]`` (a 0-d array for
    scalar values, ``(d_v,)`` otherwise) and ``weights`` ``(N,)`` is one-hot at
    ``j*``, so the result is also ``weights @ values``. Ties go to the first key.
    """
    q, k, v = _check_lookup_inputs(query, keys, values)
    scores = k @ q  # (N, d_k) @ (d_k,) -> (N,)
    weights = np.zeros_like(scores)
    weights[np.argmax(scores)] = 1.0
    return weights @ v, weights  # (N,) @ (N,) -> () or (N,) @ (N, d_v) -> (d_v,)


def soft_lookup(
    query: np.ndarray, keys: np.ndarray, values: np.ndarray, temperature: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Attention's lookup: a softmax-weighted blend of every value.

    .. math::

        w_j = \frac{e^{q \cdot k_j / \tau}}{\sum_{j'} e^{q \cdot k_{j'} / \tau}},\qquad
        \text{result} = \sum_j w_j\, v_j

    Returns ``(result, weights)`` with ``weights`` ``(N,)`` summing to 1 and
    ``result`` shaped like one value. ``temperature`` :math:`\tau` must be a
    positive, finite number; very small temperatures are safe (the softmax
    subtracts the maximum score before exponentiating).
    """
    q, k, v = _check_lookup_inputs(query, keys, values)
    temperature = _positive_temperature(temperature)
    scores = k @ q  # (N, d_k) @ (d_k,) -> (N,)
    weights = softmax(scores / temperature)  # (N,), sums to 1
    return weights @ v, weights  # (N,) @ (N,) -> () or (N,) @ (N, d_v) -> (d_v,)


def temperature_sweep(
    query: np.ndarray, keys: np.ndarray, values: np.ndarray, temperatures: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""`soft_lookup` at many temperatures at once (vectorised over :math:`\tau`).

    Returns ``(results, weights)``: ``weights`` is ``(n_temps, N)``, one softmax
    row per temperature, and ``results`` is ``(n_temps,)`` for scalar values or
    ``(n_temps, d_v)``.
    """
    q, k, v = _check_lookup_inputs(query, keys, values)
    taus = as_float_array(temperatures, "temperatures", min_ndim=1)
    if taus.ndim != 1 or np.any(taus <= 0):
        raise ValueError(f"temperatures must be a 1-D array of positive numbers, got shape {taus.shape}.")
    scores = k @ q  # (N, d_k) @ (d_k,) -> (N,)
    weights = softmax(scores[None, :] / taus[:, None], axis=-1)  # (1, N) / (n_temps, 1) -> (n_temps, N)
    return weights @ v, weights  # (n_temps, N) @ (N,) -> (n_temps,)  or  @ (N, d_v) -> (n_temps, d_v)


@dataclass(frozen=True)
class LookupComparison:
    """One query looked up the hard way and the soft way, and the soft way over a range of temperatures.

    Arrays over the N keys are ``(N,)``; over the sweep, ``(n_temps,)`` and ``(n_temps, N)``.
    """

    temperature: float  #: τ of the soft lookup
    scores: np.ndarray  #: (N,) q · k_j
    scaled_scores: np.ndarray  #: (N,) q · k_j / τ, the softmax's input
    hard_result: float  #: the value of the best-matching key
    hard_weights: np.ndarray  #: (N,) one-hot on that key
    soft_result: float  #: Σ_j w_j v_j
    soft_weights: np.ndarray  #: (N,) w = softmax(q Kᵀ / τ)
    weighted_values: np.ndarray  #: (N,) w_j v_j, which sum to the soft result
    sweep_temperatures: np.ndarray  #: (n_temps,)
    sweep_results: np.ndarray  #: (n_temps,) the soft result at each temperature
    sweep_weights: np.ndarray  #: (n_temps, N) the soft weights at each temperature


def compare_lookups(query: np.ndarray, keys: np.ndarray, values: np.ndarray, temperature: float,
                    sweep_temperatures: np.ndarray) -> LookupComparison:
    """`hard_lookup` and `soft_lookup` of one query with scalar values, and the `temperature_sweep` beside them."""
    scores = similarity_scores(query, keys)
    hard_result, hard_weights = hard_lookup(query, keys, values)
    soft_result, soft_weights = soft_lookup(query, keys, values, temperature)
    sweep_results, sweep_weights = temperature_sweep(query, keys, values, sweep_temperatures)
    return LookupComparison(
        temperature=float(temperature), scores=scores, scaled_scores=scores / temperature,
        hard_result=float(hard_result), hard_weights=hard_weights,
        soft_result=float(soft_result), soft_weights=soft_weights, weighted_values=soft_weights * values,
        sweep_temperatures=np.asarray(sweep_temperatures, dtype=np.float64), sweep_results=sweep_results,
        sweep_weights=sweep_weights,
    )


def _positive_temperature(temperature: object) -> float:
    try:
        tau = float(temperature)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"temperature must be a number, got {temperature!r}.") from None
    if not np.isfinite(tau) or tau <= 0:
        raise ValueError(f"temperature must be a positive, finite number, got {temperature!r}.")
    return tau
