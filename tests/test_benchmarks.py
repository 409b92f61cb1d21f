"""The benchmark's own parts (`python -m benchmarks`): no timing is asserted, only what the figures rest on."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.__main__ import HEAVIEST, WIDGET_TYPES, bare_page_source
from benchmarks.timing import median_ms, python_loop_s
from devtools.appserver import router_pages


def test_every_page_has_a_heaviest_extreme():
    assert {p.name for p in router_pages()} == set(HEAVIEST)


def test_the_bare_page_has_the_widgets_it_was_given(tmp_path):
    widgets = {"slider": 2, "select_slider": 1, "toggle": 1, "radio": 3, "button": 2, "text_area": 1}
    script = tmp_path / "bare.py"
    script.write_text(bare_page_source(widgets))
    at = AppTest.from_file(str(script)).run()
    assert not at.exception
    assert {k: len(at.get(k)) for k in WIDGET_TYPES if len(at.get(k))} == widgets


def test_median_ms_and_the_machine_speed_figure():
    assert median_ms([0.003, 0.001, 0.1]) == 3.0
    assert 0 < python_loop_s(n=500_000, repeats=1) < 60


def test_the_exercise_benchmark_gives_every_simulated_student_a_report():
    from benchmarks.exercise import one_class, percentile

    assert percentile([3.0, 1.0, 2.0, 10.0], 0.5) in (2.0, 3.0) and percentile([1.0, 5.0], 0.95) == 5.0
    figures = one_class(students=3, spread_s=0.2, seed=0)
    assert figures["reports_ok"] == 3 == figures["students"]
    assert figures["p50_s"] <= figures["p95_s"] <= figures["max_s"]


@pytest.mark.parametrize("processes", [1, 2], ids=["one process", "two behind nginx"])
def test_the_load_benchmark_speaks_streamlits_protocol(processes):
    """Simulated students get their pages, their slider steps answered without an exception box, and each of
    two students sees the link for their own seed; on one process, and on two behind nginx."""
    from benchmarks.load import one_hall, summary_of, table
    from devtools.cluster import nginx_binary

    if processes > 1 and nginx_binary() is None:
        pytest.skip("nginx is not installed (apt-get install -y nginx)")
    figures = one_hall(students=2, minutes=0.05, arrival_s=0.2, seed=0, processes=processes)
    assert figures["failed_sessions"] == 0 and figures["exceptions"] == 0, figures
    assert figures["steps"] >= 1 and figures["no_cross_talk"] and figures["processes"] == processes
    assert figures["step_p50_ms"] <= figures["step_p95_ms"] <= figures["step_max_ms"]
    assert figures["cpu_ms_per_step"] > 0 and figures["rss_mb"] > 0 and figures["python_loop_s"] > 0
    printed = table({processes: summary_of([figures])})
    assert ("1 process" if processes == 1 else "2 behind nginx") in printed and "step_p95_ms" in printed
    assert "python_loop_s" in printed


def test_the_poll_benchmark_accounts_for_every_vote(tmp_path):
    """A small class on SQLite: every vote before the lock accepted, every one after refused, none lost."""
    from benchmarks.poll import one_poll

    figures = one_poll(f"sqlite:///{tmp_path}/poll.sqlite3", voters=6, spread_s=0.5, changers=0.5, processes=2,
                       seed=0)
    assert figures["refused_after_lock"] == 6 and figures["failed"] == 0
    assert figures["accepted"] + figures["refused_after_lock"] == figures["votes_sent"] >= 12
    assert figures["lost"] == figures["duplicated"] == figures["accepted_after_lock"] == 0
    assert 0 < figures["vote_p50_ms"] <= figures["vote_p95_ms"] <= figures["vote_max_ms"]


def test_the_poll_benchmarks_audit_sees_lost_duplicated_and_late_votes(tmp_path):
    from benchmarks.poll import QUESTION, audit, voter_token
    from poll import open_store

    store = open_store(f"sqlite:///{tmp_path}/poll.sqlite3")
    opened = store.open_round("bench", QUESTION)
    hasher = store.voter_hasher()
    for voter in range(3):  # in the store, but voter 2 never reported as accepted: one duplicated
        store.vote(opened.id, hasher.voter(voter_token(0, voter)), "A")
    records = [(voter_token(0, 0), "A", "accepted", False, 0.01), (voter_token(0, 1), "B", "accepted", True, 0.01)]
    assert audit(store, opened.id, records) == {"lost": 1, "duplicated": 1, "accepted_after_lock": 1}
