"""`ui.cache.shared_cache`: a page's results, computed once per input for every session, and never changed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import core.masking
import ui.cache
from tests.helpers.apptest import run_page
from ui.cache import clear_shared_caches, held_bytes, read_only, result_bytes, shared_cache
from ui.charts.inline_data import Rows


def counting(max_entries: int = 8):
    """A fresh cached function (its own code, so its own cache) and the list of inputs it computed."""
    computed = []

    def define():
        @shared_cache(max_entries)
        def scores(seed: int, seq_len: int = 3, _x: object = None) -> np.ndarray:
            computed.append((seed, seq_len))
            return np.full((seq_len, seq_len), float(seed))
        return scores

    return define, computed


def test_computed_once_per_input_whatever_the_spelling_of_the_call():
    define, computed = counting()
    scores = define()
    scores.clear()
    first = scores(1, 3)
    assert scores(1) is first and scores(seed=1, seq_len=3) is first and scores(1, _x="ignored") is first
    scores(2)
    assert computed == [(1, 3), (2, 3)]


def test_a_rerun_of_the_page_finds_the_results_again():
    """A page's script runs anew on every rerun and defines its functions again: same code, same cache."""
    define, computed = counting()
    define().clear()
    define()(5)
    define()(5)
    assert computed == [(5, 3)]


def test_a_changed_function_starts_afresh():
    @shared_cache(4)
    def width(n: int) -> int:
        return n

    first = width

    @shared_cache(4)
    def width(n: int) -> int:  # noqa: F811 (the same name, as in an edited page)
        return 2 * n

    assert first(3) == 3 and width(3) == 6


def test_only_the_last_results_are_kept():
    define, computed = counting(max_entries=2)
    scores = define()
    scores.clear()
    for seed in (1, 2, 1, 3, 1, 2):  # 1 stays recent; 2 is dropped when 3 comes, and computed again
        scores(seed)
    assert computed == [(1, 3), (2, 3), (3, 3), (2, 3)]


def test_every_cache_together_holds_at_most_the_budget_and_drops_the_least_recently_used(monkeypatch):
    """Entries differ by megabytes (a 512 × 512 table against a seed's few numbers): the caches share one budget
    in bytes, and the results used least recently go first, from whichever cache holds them."""
    clear_shared_caches()
    monkeypatch.setattr(ui.cache, "BUDGET_BYTES", 10 * 800)  # ten arrays of 100 float64s
    computed = []

    @shared_cache(64)
    def big(n: int) -> np.ndarray:
        computed.append(("big", n))
        return np.zeros(100 + n)[:100].copy()

    @shared_cache(64)
    def small(n: int) -> np.ndarray:
        computed.append(("small", n))
        return np.zeros(100)

    for n in range(8):
        big(n)
    small(0)
    big(0)  # used again: now more recent than big(1) … big(7) and small(0)
    for n in range(1, 4):
        small(n)
    assert held_bytes() <= 10 * 800
    computed.clear()
    big(0), small(3)
    assert computed == []  # the recent ones stayed
    big(1), big(2)
    assert computed == [("big", 1), ("big", 2)]  # the oldest went, from the other cache too
    clear_shared_caches()
    assert held_bytes() == 0


def test_result_bytes_counts_arrays_tables_and_text_once():
    a = np.zeros(10)

    @dataclasses.dataclass(frozen=True)
    class Result:
        w: np.ndarray
        same: np.ndarray

    spec = {"datasets": {"d0": Rows({"x": np.arange(4.0)})}, "title": "abc"}
    assert result_bytes((Result(a, a), [a], spec, {"note": "abc"})) == 80 + 32 + 3


def test_a_charts_structure_is_not_counted_with_each_setting():
    """A spec's structure is held once for all the settings of its shape (`STRUCTURES`); its data, per setting."""
    structure = {"layer": [{"mark": "rect", "title": "x" * 1000}] * 20, "config": {"axis": {"labelFontSize": 12}}}
    spec = {**structure, "datasets": {"d0": Rows({"x": np.arange(4.0)})}}
    assert result_bytes(spec) == 32


def test_results_are_read_only():
    @dataclasses.dataclass(frozen=True)
    class Result:
        weights: np.ndarray
        per_head: list[np.ndarray]

    @shared_cache(2)
    def result(n: int) -> tuple[Result, np.ndarray, dict]:
        return Result(np.eye(n), [np.ones(n)]), np.zeros(n), {"spec": np.ones(1)}

    held, plain, spec = result(2)
    for array in (held.weights, held.per_head[0], plain):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    assert spec["spec"].flags.writeable  # dicts (chart specs) are not searched
    assert read_only(np.arange(3)).flags.writeable is False


def test_an_array_argument_is_keyed_by_its_values():
    computed = []

    @shared_cache(4)
    def total(x: np.ndarray) -> float:
        computed.append(x.copy())
        return float(x.sum())

    total.clear()
    assert total(np.eye(2)) == total(np.eye(2).copy()) == 2.0
    assert total(np.eye(2) * 2) == 4.0 and total(np.ones(4)) == 4.0  # other values; other shape
    assert len(computed) == 3


def test_an_unhashable_argument_is_refused():
    define, _ = counting()
    with pytest.raises(TypeError, match="unhashable"):
        define()([1, 2])
    with pytest.raises(ValueError, match="at least 1"):
        shared_cache(0)


def test_clear_shared_caches():
    define, computed = counting()
    scores = define()
    scores(7)
    clear_shared_caches()
    scores(7)
    assert computed.count((7, 3)) == 2


def test_a_second_session_at_the_same_setting_computes_nothing(monkeypatch):
    calls = []
    original = core.masking.sentence_self_attention
    monkeypatch.setattr(core.masking, "sentence_self_attention", lambda *a, **k: calls.append(a) or original(*a, **k))
    clear_shared_caches()
    run_page("app_pages/masked_attention.py", seed="23", seq_len="4")
    computed = len(calls)
    run_page("app_pages/masked_attention.py", seed="23", seq_len="4")
    assert computed >= 1 and len(calls) == computed
