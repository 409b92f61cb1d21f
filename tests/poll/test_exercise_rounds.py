"""The exercise's class rounds in the poll's store, against SQLite and PostgreSQL alike (the `store` fixture is
parametrised over both): rounds, one row per student, attempts to a pass, the summary counted from the rows,
several processes recording at once, and a round closed or replaced refusing results."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from poll import (
    CheckResult,
    MalformedInputError,
    RoundLockedError,
    StaleRoundError,
    UnknownRoundError,
    exercise_results_csv,
    open_store,
    summarise,
)
from tests.poll.conftest import raw_rows
from tests.poll.test_concurrency import stop, token

PAGE = "exercise_class"
PASS = CheckResult("passed")
NO_SCALE = CheckResult("failed", 4, "scale_none")
WRONG_AXIS = CheckResult("failed", 3, "softmax_queries")
TIMEOUT = CheckResult("did_not_finish")


def students(store, n, process=0):
    hasher = store.voter_hasher()
    return [hasher.voter(token(process, i)) for i in range(n)]


def test_a_page_has_no_exercise_round_until_one_is_opened_and_a_new_one_closes_the_last(store):
    assert store.exercise_round(PAGE) is None
    first = store.open_exercise_round(PAGE)
    assert first.number == 1 and first.is_open and not first.is_shown
    assert store.exercise_round(PAGE) == first
    second = store.open_exercise_round(PAGE)
    assert second.number == 2 and store.exercise_round(PAGE) == second
    kept = store.exercise_rounds(PAGE)
    assert [r.id for r in kept] == [first.id, second.id] and not kept[0].is_open and kept[1].is_open
    assert store.current_round(PAGE) is None, "an exercise round is not a poll question"


def test_the_latest_result_counts_and_the_checks_to_the_first_pass_are_kept(store):
    opened = store.open_exercise_round(PAGE)
    a, b, c = students(store, 3)
    for result in (NO_SCALE, WRONG_AXIS, PASS, NO_SCALE):  # a passes at the third check, then breaks it again
        store.record_result(opened.id, a, result)
    store.record_result(opened.id, b, PASS)
    store.record_result(opened.id, c, TIMEOUT)
    rows = {row.student: row for row in store.exercise_results(opened.id)}
    assert (rows[a.digest].result, rows[a.digest].attempts, rows[a.digest].attempts_to_pass) == (NO_SCALE, 4, 3)
    assert (rows[b.digest].result, rows[b.digest].attempts, rows[b.digest].attempts_to_pass) == (PASS, 1, 1)
    assert (rows[c.digest].result, rows[c.digest].attempts_to_pass) == (TIMEOUT, None)
    summary = summarise(store.exercise_results(opened.id))
    assert (summary.checked, summary.passed, summary.attempts_to_pass) == (3, 1, (1, 3))
    assert summary.median_attempts == 2
    assert dict(summary.not_passing) == {NO_SCALE: 1, TIMEOUT: 1}
    assert store.exercise_result_of(opened.id, b).result == PASS


def test_checks_made_while_the_database_was_away_count_when_sent_at_once(store):
    opened = store.open_exercise_round(PAGE)
    (student,) = students(store, 1)
    store.record_result(opened.id, student, NO_SCALE)
    store.record_result(opened.id, student, PASS, attempts=3)
    row = store.exercise_result_of(opened.id, student)
    assert (row.attempts, row.attempts_to_pass) == (4, 4)


def test_mistakes_are_ordered_largest_first(store):
    opened = store.open_exercise_round(PAGE)
    for student, result in zip(students(store, 6), [WRONG_AXIS, NO_SCALE, NO_SCALE, TIMEOUT, NO_SCALE, WRONG_AXIS],
                               strict=True):
        store.record_result(opened.id, student, result)
    summary = summarise(store.exercise_results(opened.id))
    assert summary.not_passing == ((NO_SCALE, 3), (WRONG_AXIS, 2), (TIMEOUT, 1))
    assert summary.top(2) == ((NO_SCALE, 3), (WRONG_AXIS, 2))


def test_a_closed_or_replaced_round_records_nothing(store):
    opened = store.open_exercise_round(PAGE)
    a, b = students(store, 2)
    store.record_result(opened.id, a, PASS)
    closed = store.close_exercise_round(opened.id)
    assert not closed.is_open
    with pytest.raises(RoundLockedError, match="closed"):
        store.record_result(opened.id, b, PASS)
    store.open_exercise_round(PAGE)
    with pytest.raises(StaleRoundError):
        store.record_result(opened.id, b, PASS)
    with pytest.raises(StaleRoundError):
        store.show_exercise_round(opened.id)
    assert [row.student for row in store.exercise_results(opened.id)] == [a.digest]


def test_forged_or_malformed_values_are_refused_before_the_database(store):
    opened = store.open_exercise_round(PAGE)
    (student,) = students(store, 1)
    for bad in ({"kind": "passed"}, "passed"):
        with pytest.raises(TypeError):
            store.record_result(opened.id, student, bad)
    for kind, check, mistake in (("passed; DROP TABLE x", None, None), ("failed", 7, None), ("failed", "4", None),
                                 ("failed", 4, "x" * 65), ("failed", 4, "<b>")):
        with pytest.raises(MalformedInputError):
            CheckResult(kind, check, mistake)
    for attempts in (0, -1, 10_000, 1.5, True):
        with pytest.raises(MalformedInputError):
            store.record_result(opened.id, student, PASS, attempts=attempts)
    with pytest.raises(MalformedInputError):
        store.record_result(opened.id, student.digest, PASS)
    with pytest.raises(UnknownRoundError):
        store.record_result("x" * 32, student, PASS)
    assert store.exercise_results(opened.id) == ()


def test_showing_a_round_marks_it_and_every_record_moves_the_version(store):
    opened = store.open_exercise_round(PAGE)
    before = store.version(PAGE)
    store.record_result(opened.id, students(store, 1)[0], PASS)
    assert store.version(PAGE) > before
    shown = store.show_exercise_round(opened.id)
    assert shown.is_shown and shown.is_open and store.exercise_round(PAGE).is_shown


def test_a_shown_round_can_be_hidden_again_and_its_watchers_see_it(store):
    opened = store.open_exercise_round(PAGE)
    store.show_exercise_round(opened.id)
    before = store.version(PAGE)
    hidden = store.hide_exercise_round(opened.id)
    assert not hidden.is_shown and hidden.is_open and not store.exercise_round(PAGE).is_shown
    assert store.version(PAGE) > before
    assert store.hide_exercise_round(opened.id) == hidden  # again: no change
    assert store.show_exercise_round(opened.id).is_shown
    store.open_exercise_round(PAGE)
    with pytest.raises(StaleRoundError):
        store.hide_exercise_round(opened.id)


def test_no_code_and_no_token_is_stored_and_the_csv_numbers_the_students(store, database_url):
    opened = store.open_exercise_round(PAGE)
    a, b = students(store, 2)
    store.record_result(opened.id, a, NO_SCALE)
    store.record_result(opened.id, b, PASS)
    store.record_result(opened.id, a, PASS)
    stored = repr(raw_rows(database_url, "SELECT * FROM exercise_results"))
    assert token(0, 0) not in stored and token(0, 1) not in stored
    csv = exercise_results_csv(store, PAGE)
    lines = csv.splitlines()
    assert lines[0].startswith("round,student,result,failed_check,mistake,checks,checks_to_pass")
    assert [line.split(",")[:7] for line in lines[1:]] == [["1", "1", "passed", "", "", "2", "2"],
                                                           ["1", "2", "passed", "", "", "1", "1"]]
    assert a.digest not in csv and b.digest not in csv


def record_many(url: str, round_id: str, process: int, n_students: int, start, results) -> None:
    """Each of this process's students checks a few times at random; records what each student sent last."""
    store = open_store(url)
    hasher = store.voter_hasher()
    chooser = random.Random(process)
    sent: dict[str, tuple[CheckResult, int, int | None]] = {}
    start.wait()
    for _ in range(n_students * 3):
        i = chooser.randrange(n_students)
        result = chooser.choice((PASS, NO_SCALE, WRONG_AXIS, TIMEOUT))
        store.record_result(round_id, hasher.voter(token(process, i)), result)
        last, attempts, to_pass = sent.get(token(process, i), (None, 0, None))
        attempts += 1
        sent[token(process, i)] = (result, attempts, to_pass or (attempts if result == PASS else None))
    results.put(sent)


def test_many_students_in_several_processes_are_counted_exactly(store, database_url, spawn_context):
    opened = store.open_exercise_round(PAGE)
    processes, n_students = 4, 15
    start, results = spawn_context.Barrier(processes), spawn_context.Queue()
    workers = [spawn_context.Process(target=record_many, daemon=True,
                                     args=(database_url, opened.id, p, n_students, start, results))
               for p in range(processes)]
    for worker in workers:
        worker.start()
    try:
        sent = {}
        for _ in workers:
            sent.update(results.get(timeout=180))
    finally:
        stop(workers)
    hasher = store.voter_hasher()
    rows = {row.student: row for row in store.exercise_results(opened.id)}
    assert len(rows) == len(sent)
    for student_token, (result, attempts, to_pass) in sent.items():
        row = rows[hasher.voter(student_token).digest]
        assert (row.result, row.attempts, row.attempts_to_pass) == (result, attempts, to_pass)
    summary = summarise(tuple(rows.values()))
    assert summary.passed == sum(result == PASS for result, *_ in sent.values())
    assert dict(summary.not_passing) == dict(Counter(r for r, *_ in sent.values() if r != PASS))


def test_a_check_records_in_the_open_round_only_in_one_write(store):
    (student,) = students(store, 1)
    assert store.record_check(PAGE, student, PASS) is None  # no round yet: nothing to record in
    opened = store.open_exercise_round(PAGE)
    assert store.record_check(PAGE, student, NO_SCALE) == opened
    store.close_exercise_round(opened.id)
    assert not store.record_check(PAGE, student, PASS).is_open
    assert [(r.result, r.attempts) for r in store.exercise_results(opened.id)] == [(NO_SCALE, 1)]


def test_checks_kept_while_the_database_was_away_count_only_in_their_own_round(store):
    (student,) = students(store, 1)
    first = store.open_exercise_round(PAGE)
    store.record_check(PAGE, student, NO_SCALE, attempts=3, attempts_round=first.id)
    second = store.open_exercise_round(PAGE)
    store.record_check(PAGE, student, PASS, attempts=3, attempts_round=first.id)  # made in the first, sent in the second
    assert store.exercise_result_of(first.id, student).attempts == 3
    row = store.exercise_result_of(second.id, student)
    assert (row.attempts, row.attempts_to_pass) == (1, 1)


def test_a_database_made_before_the_exercise_rounds_gets_them_and_keeps_its_poll(database_url):
    """The poll's migration style: every table is created if it does not exist when a store first connects."""
    from poll.schema import TABLES
    from tests.poll.conftest import question

    old = [statement for statement in TABLES if "exercise_" not in statement]
    assert len(old) < len(TABLES)
    if database_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(database_url.removeprefix("sqlite://")) as connection:
            for statement in old:
                connection.execute(statement)
    else:
        import psycopg

        with psycopg.connect(database_url, autocommit=True) as connection:
            for statement in old:
                connection.execute(statement)
    before = open_store(database_url)
    before._schema_ready = True  # a store of the version before: it would not create the new tables
    poll_round = before.open_round("soft_lookup", question())
    assert raw_rows(database_url, "SELECT COUNT(*) FROM poll_rounds") == [(1,)]
    store = open_store(database_url)
    opened = store.open_exercise_round(PAGE)
    store.record_check(PAGE, students(store, 1)[0], PASS)
    assert summarise(store.exercise_results(opened.id)).passed == 1
    assert store.current_round("soft_lookup") == poll_round
