"""Several processes voting at once, the lecturer locking in the middle: 0 lost, 0 duplicated, 0 accepted after
the lock, each voter counted once for their last accepted answer (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

from poll import DatabaseUnavailableError, RoundLockedError, open_store
from tests.poll.conftest import question

PAGE = "cross_attention"
PROCESSES = 4
VOTERS_PER_PROCESS = 12
#: The longest pause between two votes of one process, in seconds. SQLite keeps no queue for its write lock: a
#: writer that finds it taken polls for it, and whoever asks the moment it is free takes it. A process voting back
#: to back takes it again at once, and under load keeps the others waiting up to the store's busy timeout, which
#: no class's phones do. With the pause, every process still votes while the others write and while the
#: lecturer locks.
MAX_PAUSE_S = 0.01


def token(process: int, voter: int) -> str:
    return f"voter_{process:02d}_{voter:04d}_{'x' * 12}"


def vote_until_locked(url: str, round_id: str, process: int, start, locked, results) -> None:
    """Vote as this process's voters, changing answers at random (a short pause after each), until the lock is seen;
    then once more each (every one of those must be refused). Records (voter, option, outcome, lock seen before sending)."""
    store = open_store(url)
    hasher = store.voter_hasher()
    options = question().options
    chooser = random.Random(process)
    records = []

    def send(voter: int) -> None:
        option, lock_seen = chooser.choice(options), locked.is_set()
        try:
            store.vote(round_id, hasher.voter(token(process, voter)), option)
            outcome = "accepted"
        except RoundLockedError:
            outcome = "refused"
        except DatabaseUnavailableError:
            outcome = "failed"
        records.append((token(process, voter), option, outcome, lock_seen))

    start.wait()
    while not locked.is_set() and len(records) < 2000:
        send(chooser.randrange(VOTERS_PER_PROCESS))
        time.sleep(chooser.uniform(0, MAX_PAUSE_S))
    for voter in range(VOTERS_PER_PROCESS):
        send(voter)
    results.put(records)


def stop(workers: list) -> None:
    """Each worker ended: joined if it finished, else terminated (after a failure in the test itself)."""
    for worker in workers:
        worker.join(timeout=10)
        if worker.is_alive():
            worker.terminate()
            worker.join()


def test_votes_from_several_processes_are_counted_exactly_once(store, database_url, spawn_context):
    opened = store.open_round(PAGE, question())
    context = spawn_context
    start, locked, results = context.Barrier(PROCESSES + 1), context.Event(), context.Queue()
    workers = [context.Process(target=vote_until_locked, daemon=True,
                               args=(database_url, opened.id, p, start, locked, results)) for p in range(PROCESSES)]
    for worker in workers:
        worker.start()
    try:
        start.wait(timeout=120)
        deadline = time.monotonic() + 60
        while store.counts(opened.id).total < PROCESSES * VOTERS_PER_PROCESS // 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        store.lock(opened.id)
        at_lock = store.counts(opened.id)
        locked.set()
        records = [record for _ in workers for record in results.get(timeout=120)]
    finally:
        locked.set()
        stop(workers)

    assert not [r for r in records if r[2] == "failed"], "votes the database did not take"
    accepted = [r for r in records if r[2] == "accepted"]
    assert not [r for r in accepted if r[3]], "votes accepted after the lock"
    refused = [r for r in records if r[2] == "refused"]
    assert len(accepted) > PROCESSES * VOTERS_PER_PROCESS // 2 and len(refused) >= PROCESSES * VOTERS_PER_PROCESS
    last_accepted = {voter: option for voter, option, outcome, _ in accepted}  # each voter's votes are in order
    hasher = store.voter_hasher()
    stored = {voter: store.vote_of(opened.id, hasher.voter(voter)) for voter, *_ in records}
    assert stored == {voter: last_accepted.get(voter) for voter in stored}, "lost or misplaced votes"
    final = store.counts(opened.id)
    assert final == at_lock
    assert final.total == len(last_accepted), "duplicated or lost voters"
    assert dict(zip(final.options, final.votes, strict=True)) == {
        option: Counter(last_accepted.values())[option] for option in final.options}


class PausingCursor:
    """A cursor that stops before its first statement starting with `pause_before` until `release` is set."""

    def __init__(self, cursor, pause_before: str, reached: threading.Event, release: threading.Event) -> None:
        self._cursor, self._pause_before, self._reached, self._release = cursor, pause_before, reached, release

    def execute(self, sql, params=()):
        if sql.startswith(self._pause_before) and not self._reached.is_set():
            self._reached.set()
            assert self._release.wait(30)
        return self._cursor.execute(sql, params)

    def fetchone(self):
        return self._cursor.fetchone()

    def fetchall(self):
        return self._cursor.fetchall()


def test_a_lock_waits_for_a_vote_that_found_the_round_open(store, database_url):
    """The vote's check (round open) and its write are one turn on the page: a lock arriving between them waits,
    so the vote lands before the lock and is in the counts the lock leaves."""
    opened = store.open_round(PAGE, question())
    voting = open_store(database_url)
    reached, release = threading.Event(), threading.Event()
    run = voting._run
    voting._run = lambda operation, write: run(
        lambda cursor: operation(PausingCursor(cursor, "INSERT INTO poll_votes", reached, release)), write)
    voter = voting.voter_hasher().voter(token(0, 0))
    vote = threading.Thread(target=voting.vote, args=(opened.id, voter, "nothing"))
    lock = threading.Thread(target=store.lock, args=(opened.id,))
    vote.start()
    assert reached.wait(30)
    lock.start()
    lock.join(timeout=1.0)
    still_waiting = lock.is_alive()
    release.set()
    vote.join(timeout=30)
    lock.join(timeout=30)
    assert still_waiting, "the lock went ahead while a vote was between its check and its write"
    assert store.counts(opened.id).votes == (0, 0, 1) and not store.round(opened.id).accepts_votes
