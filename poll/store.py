"""`PollStore`: the one interface of the poll's storage, whichever database is behind it.

Every method either does all it says or raises a `poll.errors.PollError` and changes nothing. Implementations:
`poll.sqlite_store.SQLitePollStore` (one machine, any number of processes) and
`poll.postgres_store.PostgresPollStore` (several machines); `poll.factory.open_store` picks one.
"""

from __future__ import annotations

from typing import Protocol

from poll.exercise_rounds import ExerciseRoundStore
from poll.rounds import Counts, Question, Round
from poll.voters import Voter, VoterHasher


class PollStore(ExerciseRoundStore, Protocol):
    """Rounds of questions per page, one current round per page, one vote per voter per round; and the exercise's
    class rounds (`poll.exercise_rounds.ExerciseRoundStore`)."""

    def open_round(self, page: str, question: Question) -> Round:
        """Open `question` on `page` as its current round. A round still current there is locked and kept."""
        ...

    def new_round(self, round_id: str) -> Round:
        """Open the same question again, counts from zero; the current round `round_id` is locked and kept."""
        ...

    def end_round(self, round_id: str) -> Round:
        """Lock the current round `round_id` and leave its page with no current round (the round is kept)."""
        ...

    def current_round(self, page: str) -> Round | None:
        """The page's current round, or None when no round is open there."""
        ...

    def round(self, round_id: str) -> Round:
        """The round `round_id`, current or not. Raises `UnknownRoundError`."""
        ...

    def rounds(self, page: str) -> tuple[Round, ...]:
        """Every round ever opened on `page`, oldest first."""
        ...

    def vote(self, round_id: str, voter: Voter, option: str) -> None:
        """Record `voter`'s answer, replacing their earlier one in this round.

        Raises `UnknownRoundError`, `StaleRoundError` (not the page's current round), `RoundLockedError`,
        `UnknownOptionError`, `MalformedInputError` or `DatabaseUnavailableError`; then nothing was recorded.
        """
        ...

    def vote_of(self, round_id: str, voter: Voter) -> str | None:
        """`voter`'s recorded answer in the round, or None."""
        ...

    def lock(self, round_id: str) -> Round:
        """Accept no more votes in the current round `round_id` (again: no change)."""
        ...

    def reveal(self, round_id: str) -> Round:
        """Mark the current round `round_id` revealed; it is locked too."""
        ...

    def counts(self, round_id: str) -> Counts:
        """The round's counts, read from the votes themselves."""
        ...

    def version(self, page: str) -> int:
        """A number that changes whenever anything on `page` changes (a vote, open, lock, reveal, new round):
        poll it, and read rounds and counts only when it moved. 0 for a page never polled."""
        ...

    def voter_hasher(self) -> VoterHasher:
        """The hasher under this store's secret, made once and shared by every process using the database."""
        ...
