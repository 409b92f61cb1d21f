"""`ui.charts.template`: a chart's structure built once per shape, and filled with each setting's tables."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pytest

import ui.charts.template as template
from devtools.appserver import router_pages
from tests.helpers.apptest import chart_specs, run_page
from ui.cache import clear_shared_caches
from ui.charts.arrange import side_by_side
from ui.charts.heatmap import heatmap_part
from ui.charts.inline_data import Rows
from ui.charts.spec import to_spec
from ui.charts.template import STRUCTURES, Part, chart_of, compose, frozen, part_builder, part_spec


def matrix(seed: int, shape: tuple[int, int] = (3, 4)) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


def test_a_parts_spec_is_its_chart_built_with_the_data_inline():
    part = compose(side_by_side, heatmap_part(matrix(0), title="A", extra={"why": np.full((3, 4), "x", object)}),
                   heatmap_part(matrix(1), signed=False, title="B", title_in_data=True), shared_color=True)
    assert part_spec(part, canvas=True) == to_spec(chart_of(part), canvas=True)


def test_settings_of_one_shape_share_one_structure_and_not_their_data():
    STRUCTURES.clear()
    first, second = (part_spec(heatmap_part(matrix(seed), title="X", domain=(-seed - 1, seed + 1),
                                            row_labels=list("abc"[::1 - 2 * seed])))
                     for seed in (0, 1))
    assert first["layer"] is second["layer"]  # the same structure, built once
    assert first["datasets"]["d0"] != second["datasets"]["d0"]
    assert [row["lo"] for row in first["datasets"]["d0"][:1] + second["datasets"]["d0"][:1]] == [-1.0, -2.0]
    other_shape = part_spec(heatmap_part(matrix(0, (4, 4)), title="X"))
    assert other_shape["layer"] is not first["layer"]


def test_only_the_arguments_named_as_data_are_left_out_of_the_key():
    def key(**options):
        return heatmap_part(matrix(0), **options).key

    assert key(domain=(-1, 1), row_labels=["a", "b", "c"]) == key(domain=(-5, 5), row_labels=["x", "y", "z"])
    assert key(title="X") != key(title="Y")
    assert key() != heatmap_part(matrix(0, (2, 4))).key
    assert key(extra={"a": np.zeros((3, 4))}) != key(extra={"b": np.zeros((3, 4))})


def test_a_parts_key_is_worked_out_when_first_asked_for_and_once(monkeypatch):
    calls = []
    monkeypatch.setattr(template, "_key", lambda *args: calls.append(args) or ("key", len(calls)))
    inner = heatmap_part(matrix(0), title="inside")  # drawn only inside another chart: never keyed
    outer = compose(side_by_side, heatmap_part(matrix(1), title="A"), heatmap_part(matrix(2), title="B"))
    assert not calls and inner.make and outer.tables
    first = outer.key
    assert len(calls) == 3 and outer.key == first and len(calls) == 3  # both parts and the arrangement, once


def test_frozen_keys_arrays_by_shape_and_type_and_refuses_what_it_cannot_key():
    @dataclass(frozen=True)
    class Result:
        w: np.ndarray
        n: int

    assert frozen(np.zeros((2, 3))) == frozen(np.ones((2, 3))) != frozen(np.zeros((3, 2)))
    assert frozen(np.zeros(2)) != frozen(np.zeros(2, dtype=np.int64))
    assert frozen(Result(np.zeros(2), 1)) == frozen(Result(np.ones(2), 1)) != frozen(Result(np.zeros(2), 2))
    assert frozen({"a": [1, (2, "b")]}) == frozen({"a": (1, [2, "b"])})
    with pytest.raises(template.UnkeyableError):
        frozen(object())


def test_a_part_that_cannot_be_keyed_is_built_anew_every_time():
    @part_builder()
    def dots(values, *, where):
        return [Rows({"v": values})], lambda data: template.alt.Chart(data()).mark_point().encode(x="v:Q")

    part = dots(np.arange(3.0), where=object())
    assert part.key is None
    first, second = part_spec(part), part_spec(part)
    assert first == second and first["mark"] is not second["mark"]


def test_the_structures_kept_are_bounded():
    structures = template._Structures(max_entries=2)
    parts = [heatmap_part(matrix(0, (n, 2))) for n in (1, 2, 3)]
    for part in parts:
        structures.get(part, canvas=False)
    assert len(structures.entries) == 2 and (parts[0].key, False) not in structures.entries


def random_steps(at, rng: random.Random, steps: int) -> list[tuple[str, object]]:
    """`steps` slider moves to random values, as students click anywhere on a track: (slider key, value)."""
    moves = []
    for _ in range(steps):
        sliders = [s for s in [*at.slider, *at.select_slider] if s.key]
        if not sliders:
            break
        slider = rng.choice(sliders)
        if hasattr(slider, "options") and slider.options:  # a select slider: an option, in its value's type
            value = type(slider.value)(rng.choice(list(slider.options)))
        else:
            n = int(round((slider.max - slider.min) / slider.step))
            value = slider.min + rng.randint(0, n) * slider.step
            value = int(value) if float(value).is_integer() else value
        moves.append((slider.key, value))
        slider.set_value(value)
        at.run()
    return moves


def drawn(at) -> list[tuple[dict, dict[str, str]]]:
    return [(spec, {name: frame.to_json() for name, frame in frames.items()}) for spec, frames in chart_specs(at)]


def replay(page: str, moves: list[tuple[str, object]]) -> list[list[tuple[dict, dict[str, str]]]]:
    """The charts drawn after opening `page` and after each move."""
    at = run_page(page)
    seen = [drawn(at)]
    for key, value in moves:
        widget = next(w for w in [*at.slider, *at.select_slider] if w.key == key)
        widget.set_value(value)
        at.run()
        assert not at.exception, at.exception
        seen.append(drawn(at))
    return seen


@pytest.mark.parametrize("page", [p for p in router_pages() if p.name not in ("pretrained", "training",
                                                                                 "attention_cost", "exercise",
                                                                                 "decoder")],
                         ids=lambda p: p.name)
def test_every_page_draws_from_structures_built_for_other_settings_what_it_draws_built_anew(page, monkeypatch):
    """Random moves of the page's sliders, each to any value, draw the same specs and data whether each chart's
    structure comes from one built for an earlier setting of the same shape or is built anew: a structure depends
    on nothing that its key leaves out. (The model, training and cost pages draw no chart of a part that a slider
    reshapes; their charts are compared in their own tests.)"""
    rng = random.Random(page.name)
    clear_shared_caches()
    STRUCTURES.clear()
    moves = random_steps(run_page(page.file), rng, steps=6)
    assert moves, f"{page.name} has no slider"
    reused = replay(page.file, moves)
    built = [0]

    def anew(part: Part, canvas: bool) -> dict:
        built[0] += 1
        return template.structure_of(part, canvas)

    clear_shared_caches()
    monkeypatch.setattr(STRUCTURES, "get", anew)
    assert replay(page.file, moves) == reused
    assert built[0] > 0  # the page's charts are parts
    clear_shared_caches()
