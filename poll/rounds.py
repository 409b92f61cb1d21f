"""A poll's question (fixed when a round opens), a round of it, and a round's counts: frozen values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from poll.errors import InvalidQuestionError, MalformedInputError
from poll.limits import (
    EXPLANATION_CHARS,
    MAX_OPTIONS,
    MIN_OPTIONS,
    OPTION_CHARS,
    QUESTION_CHARS,
    SETTINGS_CHARS,
    checked_name,
    checked_text,
)


@dataclass(frozen=True)
class Question:
    """A quiz's question as the lecturer's settings made it: `answer` is the option computed at `settings`.

    `quiz` is the quiz's key on its page (``ui.quiz.predict_then_reveal``'s `key`); `settings` is the query
    string of the lecturer's page (``seed=3&heads=4``), so a student can open the question's own view.
    Raises `InvalidQuestionError` when it cannot be polled (a bug in the asking page).
    """

    quiz: str
    text: str
    options: tuple[str, ...]
    answer: str
    explanation: str
    settings: str = ""

    def __post_init__(self) -> None:
        try:
            checked_name(self.quiz, "quiz's key")
            checked_text(self.text, "question", QUESTION_CHARS)
            checked_text(self.explanation, "explanation", EXPLANATION_CHARS)
            checked_text(self.settings, "settings", SETTINGS_CHARS)
            if not isinstance(self.options, tuple):
                raise InvalidQuestionError("A question's options must be a tuple.")
            for option in self.options:
                checked_text(option, "option", OPTION_CHARS)
        except MalformedInputError as error:
            raise InvalidQuestionError(str(error)) from None
        if not MIN_OPTIONS <= len(self.options) <= MAX_OPTIONS or len(set(self.options)) != len(self.options):
            raise InvalidQuestionError(f"A question needs {MIN_OPTIONS} to {MAX_OPTIONS} distinct options.")
        if self.answer not in self.options:
            raise InvalidQuestionError("The computed answer is not one of the question's options.")


@dataclass(frozen=True)
class Round:
    """One opening of a question to the class. `number` counts the rounds of this page's quiz (1, 2, …).

    Answers are accepted while `locked_at` is None; `revealed_at` is set once the answer was shown (a reveal
    locks too). Times are aware datetimes in UTC.
    """

    id: str
    page: str
    number: int
    question: Question
    opened_at: datetime
    locked_at: datetime | None = None
    revealed_at: datetime | None = None

    @property
    def accepts_votes(self) -> bool:
        return self.locked_at is None

    @property
    def is_revealed(self) -> bool:
        return self.revealed_at is not None


@dataclass(frozen=True)
class Counts:
    """How many voters' current answer is each option of a round, in the options' order."""

    round_id: str
    options: tuple[str, ...]
    votes: tuple[int, ...]

    @property
    def total(self) -> int:
        """The number of voters (each counted once, for their latest answer)."""
        return sum(self.votes)

    def of(self, option: str) -> int:
        return self.votes[self.options.index(option)]
