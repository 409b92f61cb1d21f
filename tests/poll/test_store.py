"""The store's rules, against SQLite and PostgreSQL alike (the `store` fixture is parametrised over both)."""

from __future__ import annotations

import secrets

import pytest

from poll import (
    MalformedInputError,
    RoundLockedError,
    StaleRoundError,
    UnknownOptionError,
    UnknownRoundError,
    Voter,
    new_browser_token,
    open_store,
)
from tests.poll.conftest import question, raw_rows

PAGE = "scaled_attention"


def voters(store, n):
    hasher = store.voter_hasher()
    return [hasher.voter(new_browser_token()) for _ in range(n)]


def test_a_page_has_no_round_until_one_is_opened(store):
    assert store.current_round(PAGE) is None
    assert store.version(PAGE) == 0
    opened = store.open_round(PAGE, question())
    assert store.current_round(PAGE) == opened == store.round(opened.id)
    assert opened.number == 1 and opened.accepts_votes and not opened.is_revealed
    assert opened.question == question() and opened.locked_at is None
    assert store.current_round("multi_head") is None


def test_every_option_is_counted_in_the_options_order(store):
    opened = store.open_round(PAGE, question())
    a, b, c = voters(store, 3)
    store.vote(opened.id, a, "nothing")
    store.vote(opened.id, b, "it shrinks")
    store.vote(opened.id, c, "nothing")
    counts = store.counts(opened.id)
    assert counts.options == ("it grows", "it shrinks", "nothing")
    assert counts.votes == (0, 1, 2) and counts.total == 3 and counts.of("nothing") == 2


def test_a_second_vote_replaces_the_first(store):
    opened = store.open_round(PAGE, question())
    (voter,) = voters(store, 1)
    store.vote(opened.id, voter, "it grows")
    store.vote(opened.id, voter, "nothing")
    store.vote(opened.id, voter, "nothing")
    assert store.counts(opened.id).votes == (0, 0, 1)
    assert store.vote_of(opened.id, voter) == "nothing"


def test_one_browser_token_is_one_voter_in_every_process(store, database_url):
    """Two stores on one database (two app processes) hash a browser's token alike: one vote, not two."""
    token = new_browser_token()
    opened = store.open_round(PAGE, question())
    store.vote(opened.id, store.voter_hasher().voter(token), "it grows")
    other = open_store(database_url)
    other.vote(opened.id, other.voter_hasher().voter(token), "it shrinks")
    assert store.counts(opened.id).votes == (0, 1, 0)


def test_lock_refuses_later_votes_and_keeps_the_counts(store):
    opened = store.open_round(PAGE, question())
    voter, late = voters(store, 2)
    store.vote(opened.id, voter, "it grows")
    locked = store.lock(opened.id)
    assert not locked.accepts_votes and locked.locked_at >= opened.opened_at
    for who in (voter, late):
        with pytest.raises(RoundLockedError, match="closed"):
            store.vote(opened.id, who, "nothing")
    assert store.counts(opened.id).votes == (1, 0, 0)
    assert store.lock(opened.id).locked_at == locked.locked_at  # locking again changes nothing


def test_reveal_locks_and_marks_the_round_revealed(store):
    opened = store.open_round(PAGE, question())
    revealed = store.reveal(opened.id)
    assert revealed.is_revealed and not revealed.accepts_votes
    assert store.current_round(PAGE) == revealed
    with pytest.raises(RoundLockedError):
        store.vote(opened.id, voters(store, 1)[0], "nothing")


def test_a_new_round_restarts_the_counts_and_keeps_the_old_round(store):
    first = store.open_round(PAGE, question())
    (voter,) = voters(store, 1)
    store.vote(first.id, voter, "it grows")
    second = store.new_round(first.id)
    assert second.id != first.id and second.number == 2 and second.question == first.question
    assert store.current_round(PAGE) == second and store.counts(second.id).total == 0
    assert store.counts(first.id).votes == (1, 0, 0) and not store.round(first.id).accepts_votes
    store.vote(second.id, voter, "nothing")
    assert store.counts(second.id).votes == (0, 0, 1) and store.counts(first.id).votes == (1, 0, 0)
    assert [r.id for r in store.rounds(PAGE)] == [first.id, second.id]


def test_the_old_rounds_id_is_stale_once_another_round_is_current(store):
    first = store.open_round(PAGE, question())
    store.new_round(first.id)
    (voter,) = voters(store, 1)
    for refused in (lambda: store.vote(first.id, voter, "nothing"), lambda: store.lock(first.id),
                    lambda: store.reveal(first.id), lambda: store.new_round(first.id)):
        with pytest.raises(StaleRoundError, match="moved on"):
            refused()
    assert len(store.rounds(PAGE)) == 2


def test_opening_another_question_locks_the_current_one(store):
    first = store.open_round(PAGE, question())
    other = store.open_round(PAGE, question(quiz="which_row"))
    assert other.number == 1 and store.current_round(PAGE) == other
    assert not store.round(first.id).accepts_votes


def test_ending_a_round_leaves_the_page_without_one(store):
    opened = store.open_round(PAGE, question())
    ended = store.end_round(opened.id)
    assert store.current_round(PAGE) is None and not ended.accepts_votes
    with pytest.raises(StaleRoundError):
        store.vote(opened.id, voters(store, 1)[0], "nothing")


def test_the_version_moves_on_every_change_and_only_then(store):
    seen = [store.version(PAGE)]
    opened = store.open_round(PAGE, question())
    seen.append(store.version(PAGE))
    (voter,) = voters(store, 1)
    store.vote(opened.id, voter, "nothing")
    seen.append(store.version(PAGE))
    store.counts(opened.id), store.current_round(PAGE), store.vote_of(opened.id, voter)
    assert store.version(PAGE) == seen[-1]  # reading changes nothing
    for change in (store.lock, store.reveal, store.new_round):
        change(store.current_round(PAGE).id)
        seen.append(store.version(PAGE))
    assert seen == sorted(set(seen)), seen
    assert store.version("multi_head") == 0


def test_a_refused_vote_changes_nothing_not_even_the_version(store):
    opened = store.open_round(PAGE, question())
    (voter,) = voters(store, 1)
    store.vote(opened.id, voter, "it grows")
    before = (store.version(PAGE), store.counts(opened.id))
    with pytest.raises(UnknownOptionError, match="not one of"):
        store.vote(opened.id, voter, "it explodes")
    with pytest.raises(UnknownOptionError):
        store.vote(opened.id, voter, "It grows")
    assert (store.version(PAGE), store.counts(opened.id)) == before
    assert store.vote_of(opened.id, voter) == "it grows"


@pytest.mark.parametrize("round_id", ["A" * 32, secrets.token_urlsafe(24)], ids=["all-A", "random"])
def test_a_forged_round_id_is_refused(store, round_id):
    store.open_round(PAGE, question())
    (voter,) = voters(store, 1)
    for refused in (lambda: store.vote(round_id, voter, "nothing"), lambda: store.counts(round_id),
                    lambda: store.lock(round_id), lambda: store.round(round_id)):
        with pytest.raises(UnknownRoundError, match="not one the lecturer opened"):
            refused()


@pytest.mark.parametrize("round_id", ["", "short", "x" * 65, "../../etc/passwd", "a b" * 10, None, 12345,
                                      "é" * 20, "x" * 10_000])
def test_a_malformed_round_id_is_refused_before_the_database(store, round_id):
    with pytest.raises(MalformedInputError, match="round id"):
        store.vote(round_id, voters(store, 1)[0], "nothing")


@pytest.mark.parametrize("option", ["x" * 301, "nothing\x00", "\ud800", None, 3, ["nothing"]])
def test_a_malformed_answer_is_refused(store, option):
    opened = store.open_round(PAGE, question())
    with pytest.raises(MalformedInputError, match="answer"):
        store.vote(opened.id, voters(store, 1)[0], option)
    assert store.counts(opened.id).total == 0


@pytest.mark.parametrize("voter", ["0" * 64, new_browser_token(), None], ids=["zeros", "a-browser-token", "none"])
def test_only_a_hashed_voter_can_vote(store, voter):
    opened = store.open_round(PAGE, question())
    with pytest.raises(MalformedInputError, match="voter"):
        store.vote(opened.id, voter, "nothing")
    with pytest.raises(MalformedInputError):
        Voter("not a digest")


@pytest.mark.parametrize("page", ["", "a/b", "x" * 65, None, "multi head"])
def test_a_malformed_page_is_refused(store, page):
    with pytest.raises(MalformedInputError, match="page"):
        store.current_round(page)
    with pytest.raises(MalformedInputError, match="page"):
        store.open_round(page, question())


def test_the_store_keeps_only_the_keyed_hash_of_a_browser_token(store, database_url):
    token = new_browser_token()
    opened = store.open_round(PAGE, question())
    store.vote(opened.id, store.voter_hasher().voter(token), "nothing")
    stored = raw_rows(database_url, "SELECT round_id, voter, option FROM poll_votes")
    assert stored == [(opened.id, store.voter_hasher().voter(token).digest, 2)]
    assert token not in repr(raw_rows(database_url, "SELECT * FROM poll_votes"))
