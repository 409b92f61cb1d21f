"""A question is checked when it is made: a page's bug is found when it asks, never when a student answers."""

from __future__ import annotations

import dataclasses

import pytest

from poll import Counts, InvalidQuestionError, Question
from tests.poll.conftest import question


@pytest.mark.parametrize("change", [
    {"answer": "it explodes"},
    {"options": ("only one",), "answer": "only one"},
    {"options": ("a", "a", "b"), "answer": "a"},
    {"options": ["it grows", "it shrinks"], "answer": "it grows"},
    {"options": tuple(f"option {i}" for i in range(13)), "answer": "option 0"},
    {"options": ("x" * 301, "y"), "answer": "y"},
    {"text": "q" * 2001},
    {"text": "nul\x00"},
    {"explanation": "\udc00"},
    {"settings": "s" * 4001},
    {"quiz": "has space"},
    {"quiz": ""},
])
def test_a_question_that_cannot_be_polled_is_refused(change):
    with pytest.raises(InvalidQuestionError):
        dataclasses.replace(question(), **change)


def test_a_question_at_the_caps_is_accepted():
    options = tuple("o" * 298 + f"{i:02d}" for i in range(12))
    made = Question(quiz="q" * 64, text="t" * 2000, options=options, answer=options[-1], explanation="e" * 20_000,
                    settings="s" * 4000)
    assert made.answer == options[-1]


def test_counts_total_and_per_option():
    counts = Counts("r", ("a", "b", "c"), (2, 0, 5))
    assert counts.total == 7 and counts.of("c") == 5 and counts.of("b") == 0
