"""The benchmark's own parts (`python -m benchmarks`): no timing is asserted, only what the figures rest on."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.__main__ import WIDGET_TYPES, bare_page_source, heaviest_link
from benchmarks.protocol import cpu_s
from benchmarks.timing import median_ms, python_loop_s
from devtools.appserver import RouterPage, router_pages
from tests.helpers.apptest import run_page
from tests.ui.url_keys import page_keys


@pytest.mark.parametrize("page", router_pages(), ids=lambda p: p.name)
def test_every_page_has_a_heaviest_extreme(page):
    try:
        link = heaviest_link(page)
    except LookupError as missing:
        pytest.fail(str(missing))
    assert set(link) <= page_keys(page.name), f"{page.file}: HEAVIEST_LINK names keys the page does not read"


def declared_link(page: RouterPage) -> dict[str, str]:
    try:
        return heaviest_link(page)
    except LookupError:
        return {}  # test_every_page_has_a_heaviest_extreme says what to add


@pytest.mark.parametrize("page", [p for p in router_pages() if declared_link(p)], ids=lambda p: p.name)
def test_the_heaviest_link_is_one_the_page_uses(page):
    """A value the page cannot use falls back to a lighter one, with a notice or an error: the benchmark would time
    the fallback."""
    at = run_page(page.file, **heaviest_link(page))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not [i.value for i in at.info if "could not be used here" in i.value]


def test_a_page_without_a_heaviest_link_is_told_what_to_add(tmp_path):
    script = tmp_path / "app_pages" / "new.py"
    script.parent.mkdir()
    script.write_text("import streamlit as st\n\nst.title('new')\n")
    page = RouterPage(str(script), "new", "new", "New")
    with pytest.raises(LookupError, match="declares no HEAVIEST_LINK: add `HEAVIEST_LINK = {...}` at its module"):
        heaviest_link(page)
    for wrong in ("{'seed': 3}", "{'seed': str(3)}"):
        script.write_text(f"HEAVIEST_LINK = {wrong}\n")
        with pytest.raises(LookupError, match="must be a dict literal of query keys to texts, not {'seed': "):
            heaviest_link(page)


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


@pytest.fixture(scope="module")
def hall_server(tmp_path_factory):
    """One app process for the small halls, first visits and new settings of this module, which need nothing of
    their own from it: it is started, and its decoder trained, once."""
    from benchmarks.load import POLL_KEY
    from devtools.appserver import AppServer

    env = {"ATTENTION_POLL_DATA_DIR": str(tmp_path_factory.mktemp("poll")), "ATTENTION_PRESENTER_KEY": POLL_KEY}
    with AppServer(env=env) as server:
        yield server


@pytest.fixture
def no_server_of_its_own(monkeypatch):
    """A benchmark given `hall_server` fails the test if it starts an app process of its own instead."""
    from devtools.appserver import AppServer

    monkeypatch.setattr(AppServer, "start", lambda self: pytest.fail("the benchmark started a server of its own"))


def assert_the_hall_spoke_the_protocol(figures: dict, processes: int, regime: str) -> None:
    """Simulated students got their pages, their slider steps were answered without an exception box, and each of
    two students saw the link for their own seed."""
    from benchmarks.hall_report import layout_name, summary_of, table

    assert figures["failed_sessions"] == 0 and figures["exceptions"] == 0, figures
    assert figures["steps"] >= 1 and figures["no_cross_talk"] and figures["processes"] == processes
    assert figures["regime"] == regime
    assert figures["step_p50_ms"] <= figures["step_p95_ms"] <= figures["step_max_ms"]
    assert figures["cpu_ms_per_step"] > 0 and figures["rss_mb"] > 0 and figures["python_loop_s"] > 0
    printed = table({layout_name(regime, processes): summary_of([figures])})
    assert f"{regime}, " + ("1 process" if processes == 1 else "2 behind nginx") in printed
    assert "step_p95_ms" in printed and "python_loop_s" in printed and "nginx_5xx" in printed


@pytest.mark.parametrize("regime", ["notch", "jump", "link"])
def test_the_load_benchmark_speaks_streamlits_protocol_to_one_process(regime, hall_server):
    from benchmarks.load import one_hall

    figures = one_hall(students=2, minutes=0.05, arrival_s=0.2, seed=0, regime=regime, server=hall_server)
    assert_the_hall_spoke_the_protocol(figures, 1, regime)
    assert figures["nginx_5xx"] == figures["taken_out"] == 0
    assert figures["app_pids"] == [hall_server.proc.pid] and hall_server.proc.poll() is None  # used, left running


def test_the_load_benchmark_speaks_streamlits_protocol_to_two_processes_behind_nginx():
    from benchmarks.load import one_hall
    from devtools.cluster import nginx_binary

    if nginx_binary() is None:
        pytest.skip("nginx is not installed (apt-get install -y nginx)")
    figures = one_hall(students=2, minutes=0.05, arrival_s=0.2, seed=0, processes=2, regime="jump")
    assert_the_hall_spoke_the_protocol(figures, 2, "jump")
    assert figures["nginx_5xx"] == figures["taken_out"] == 0 and figures["upstream_errors"] == {}


def test_a_halls_students_are_spread_over_the_pages_in_turn():
    """Each student opens the next page of the router (sorted by url path); the hall trains only those opened."""
    from benchmarks.load import students_pages

    hashes = {"": "h0", "b": "h2", "a": "h1"}
    assert students_pages(hashes, 2) == ["", "a"]
    assert students_pages(hashes, 5) == ["", "a", "b", "", "a"]


def test_a_hall_on_a_running_server_refuses_what_needs_a_server_of_its_own(hall_server):
    from benchmarks.load import one_hall

    for extra in ({"processes": 2}, {"box": True}, {"poll_round": True}, {"profile": Path("profile")}):
        with pytest.raises(ValueError, match="running server"):
            one_hall(students=1, minutes=0.01, arrival_s=0.1, seed=0, server=hall_server, **extra)


def test_a_pinned_hall_has_one_process_outside_any_box():
    from benchmarks.load import one_hall

    for extra in ({"processes": 2}, {"box": True}, {"machines": 2, "processes": 2}):
        with pytest.raises(ValueError, match="pinned hall"):
            one_hall(students=1, minutes=0.01, arrival_s=0.1, seed=0, pin="0", **extra)


def test_a_hall_on_several_machines_spreads_its_processes_evenly_and_refuses_what_it_cannot_do(monkeypatch):
    """`--machines`: the processes are spread evenly over the machines (`devtools.hosts`), whose nginx the hall reads
    as a cluster of its own; an uneven spread, Cloud's box or a poll round is refused before anything starts."""
    from benchmarks import load
    from benchmarks.hall_report import layout_name

    for extra in ({"processes": 3}, {"box": True}, {"poll_round": True}):
        with pytest.raises(ValueError, match="2 machines"):
            load.one_hall(students=1, minutes=0.01, arrival_s=0.1, seed=0, machines=2, **{"processes": 4} | extra)
    made = []

    class FakeHosts:
        def __init__(self, machines, processes, env):
            made.append((machines, processes, env))
            self.cluster = object()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            made.append("stopped")

    monkeypatch.setattr(load, "Hosts", FakeHosts)
    with load.on_machines(2, 6, {"KEY": "k"}) as cluster:
        assert made == [(2, 3, {"KEY": "k"})] and cluster is not None
    assert made[-1] == "stopped"
    assert layout_name("jump", 4, 2) == "jump, 4 on 2 machines behind nginx"
    assert layout_name("jump", 4) == "jump, 4 behind nginx" and layout_name("notch", 1) == "notch, 1 process"


def test_the_load_benchmark_asks_the_polls_route_and_can_keep_a_round_open():
    """Students on pages with a quiz ask the poll watcher's route as their browsers do; with `poll_round`, a
    lecturer's panel with an open round reruns every second all along, without an exception box; the students
    who open the scaled-attention page see that round (which they were drawn at: no change to ask for)."""
    from benchmarks.load import one_hall

    figures = one_hall(students=11, minutes=0.15, arrival_s=0.5, seed=0, regime="jump", poll_round=True,
                       trained=False)  # times nothing: the lecturer's training is tested on `hall_server`
    assert figures["failed_sessions"] == 0 and figures["exceptions"] == 0, figures
    assert figures["round_state_asks"] > 0 and figures["round_state_changes"] == 0
    assert figures["poll_round_open"] and figures["presenter_ticks"] >= 3


def test_a_jump_lands_anywhere_on_the_slider_and_a_notch_next_door():
    """The two ways students move a slider: an arrow key's notch, or a click anywhere on its track."""
    import random

    from benchmarks.protocol import Slider, grid, next_value, option_text
    from benchmarks.students import random_link

    seed = Slider("s", "Seed", [5.0], 0.0, 99.0, 1.0, "f", "seed", [])
    temp = Slider("t", "τ", [1.0], 0.0, 3.0, 1.0, "f", "temp", ["0.1", "0.3", "1", "3"])
    rng = random.Random(0)
    notches = {next_value(seed, "notch", rng) for _ in range(50)}
    jumps = {next_value(seed, "jump", rng) for _ in range(200)}
    assert notches == {4.0, 6.0}
    assert len(jumps) > 50 and 5.0 not in jumps and jumps <= set(grid(seed)) and max(jumps) - min(jumps) > 80
    assert grid(temp) == [0.0, 1.0, 2.0, 3.0] and option_text(temp, 3.0) == "3" and option_text(seed, 7.0) == "7"
    links = [random_link([seed, temp], rng) for _ in range(100)]
    assert all(set(link) == {"seed", "temp"} and link["temp"] in temp.options for link in links)
    assert len({link["seed"] for link in links}) > 30


def test_new_settings_cost_is_measured_per_slider(hall_server, no_server_of_its_own):
    """One student alone steps every slider to values not seen before: the CPU and wall time per step (on the
    module's server, left running)."""
    from benchmarks.new_settings import new_settings_cpu, solo_table

    figures = new_settings_cpu(steps_per_slider=1, server=hall_server)
    assert hall_server.proc.poll() is None
    assert {name.split(": ")[0] for name in figures} >= {"(home)", "multi_head", "positional_encoding"}
    assert all(f["steps"] == 1 and f["cpu_ms"] >= 0 and f["wall_ms"] > 0 for f in figures.values())
    assert "median over sliders" in solo_table(figures)


def test_a_run_that_never_ends_is_reported_with_its_page_and_fragment(hall_server, monkeypatch):
    """A student that waits in vain says for which page and fragment (a class's failed sessions are read from it)."""
    import benchmarks.protocol as protocol
    from tests.helpers.browser_pages import server_stalled

    page = protocol.page_hashes(hall_server.url)["transformer_block"]

    async def stalled_step() -> None:
        student = protocol.Student(hall_server.url, page, random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            student.absorb(seen)
            monkeypatch.setattr(protocol, "ANSWER_TIMEOUT_S", 0.5)
            fragment = student.step_slider("jump")
            with server_stalled(hall_server, 1.5):
                await student.rerun(fragment)
        finally:
            await student.ws.close()

    with pytest.raises(TimeoutError, match=rf"page {page}, fragment \w+, within 0.5 s, after \d+ messages"):
        protocol.run_coroutine(stalled_step())


def test_a_simulated_tab_keeps_the_sliders_of_a_fragment_that_did_not_run(hall_server):
    """As a browser does: a step of one fragment's slider leaves the sliders of the page's other fragment alone (the
    whole-block page: the block's sliders and the deep stack's), and the run says which fragment it was and where
    each fragment's messages lie, from which a fragment nested in another is told apart from a sibling."""
    from benchmarks.new_settings import slider_name
    from benchmarks.protocol import Student, page_hashes, run_coroutine

    async def steps() -> tuple[set[str], set[str], dict[str, list[int]], str]:
        student = Student(hall_server.url, page_hashes(hall_server.url)["transformer_block"], random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            student.absorb(seen)
            first = {slider_name(s) for s in student.sliders.values()}
            seed = next(s for s in student.sliders.values() if slider_name(s) == "seed")
            student.set_slider(seed, 1.0)
            _, step = await student.rerun(seed.fragment_id)
            student.absorb(step)
            return first, {slider_name(s) for s in student.sliders.values()}, step.spans, step.ran
        finally:
            await student.ws.close()

    first, after, spans, ran = run_coroutine(steps())
    assert {"seed", "layers"} <= first
    assert after == first  # the deep stack's depth slider is still there to step
    assert ran and list(spans) == [ran] and spans[ran][0] < spans[ran][1]


def test_new_settings_steps_the_pages_asked_for_by_their_url_paths():
    from benchmarks.new_settings import HOME, chosen_pages, page_medians

    hashes = {"": "h0", "multi_head": "h1", "transformer_block": "h2"}
    assert chosen_pages(hashes, None) == hashes
    assert chosen_pages(hashes, ["transformer_block", HOME]) == {"": "h0", "transformer_block": "h2"}
    with pytest.raises(ValueError, match="no page multihead; the pages are: home, multi_head, transformer_block"):
        chosen_pages(hashes, ["multihead"])
    figures = {"multi_head: seed": {"cpu_ms": 10.0}, "multi_head: heads": {"cpu_ms": 30.0},
               "multi_head: d_k": {"cpu_ms": 12.0}, "(home): seed": {"cpu_ms": 5.0},
               "multi_head: switch act": {"cpu_ms": 99.0}}  # a switch is listed, not part of the sliders' median
    assert page_medians(figures) == {"multi_head": 12.0, "(home)": 5.0}


def test_a_simulated_tab_flips_the_pages_radios_and_toggles_as_a_browser_does(hall_server):
    """The whole-block page's switches bound to the URL (the activation, the norms' placement, the shuffle, the
    residual and the norm): a flip sends the widget's new state and URL, reruns the fragment it is in, and the
    server draws the page for it; a later step of another control keeps it."""
    from benchmarks.new_settings import flip_to_a_new_value
    from benchmarks.protocol import Student, page_hashes, run_coroutine

    async def flips() -> tuple[set[str], list[str], list[str]]:
        student = Student(hall_server.url, page_hashes(hall_server.url)["transformer_block"], random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            student.absorb(seen)
            keys = {w.query_key for w in student.switches.values() if w.query_key}
            act = await flip_to_a_new_value(student, "act", set())
            residual = await flip_to_a_new_value(student, "residual", set())
            seed = next(s for s in student.sliders.values() if s.query_key == "seed")
            student.set_slider(seed, 2.0)
            _, later = await student.rerun(seed.fragment_id)
            return keys, act.markdown + residual.markdown + later.markdown, [student.query["act"],
                                                                              student.query["residual"]]
        finally:
            await student.ws.close()

    keys, texts, query = run_coroutine(flips())
    assert keys == {"act", "ln", "perm", "residual", "norm"}
    assert query == ["GELU", "false"]
    assert sum('activation="gelu"' in t for t in texts) == 2  # after the flip, and after the seed's step
    assert any(t.startswith("**24 blocks, residual off, norm on.**") for t in texts)


def test_a_simulated_tab_forgets_a_switch_its_page_no_longer_draws(hall_server):
    """The worked example's token choice is drawn only once the stages reach the output: revealed up to the scores,
    it is gone, and a tab that still flipped it would ask for a fragment the server no longer holds (and never
    hear back). Shown again, it can be flipped again."""
    from benchmarks.new_settings import flip_to_a_new_value
    from benchmarks.protocol import Student, page_hashes, run_coroutine

    async def steps() -> tuple[bool, object, str]:
        student = Student(hall_server.url, page_hashes(hall_server.url)[""], random.Random(0))
        await student.connect()
        try:
            _, seen = await student.rerun()
            student.absorb(seen)
            had_token = any(w.query_key == "token" for w in student.switches.values())
            reveal = next(s for s in student.sliders.values() if s.query_key == "reveal")
            student.set_slider(reveal, float(reveal.options.index("scaled scores")))
            _, step = await student.rerun(reveal.fragment_id)
            student.absorb(step)
            gone = await flip_to_a_new_value(student, "token", set())
            student.set_slider(reveal, float(len(reveal.options) - 1))
            _, step = await student.rerun(reveal.fragment_id)
            student.absorb(step)
            back = await flip_to_a_new_value(student, "token", set())
            return had_token, gone, back is not None and student.query.get("token", "")
        finally:
            await student.ws.close()

    had_token, gone, token = run_coroutine(steps())
    assert had_token and gone is None
    assert token == "cat"  # flipped once it was drawn again: the second of the lesson's tokens


def test_a_first_visit_is_measured_on_every_page_with_a_session_kept_open(hall_server, no_server_of_its_own):
    """One new student after another opens each page while another session stays open: CPU per visit, by page (on
    the module's server, left running)."""
    from benchmarks.first_visits import first_visit_cpu, visit_table

    figures = first_visit_cpu(rounds=1, warm_rounds=1, server=hall_server)
    assert hall_server.proc.poll() is None
    assert {"", "multi_head", "positional_encoding", "decoder"} <= set(figures)
    assert all(len(visits) == 1 and visits[0] >= 0 for visits in figures.values())
    assert "mean over every visit" in visit_table(figures)


def test_a_profiled_run_refuses_a_running_server():
    """py-spy writes its files when the server it samples exits: a run on a server left running cannot be profiled."""
    from benchmarks.first_visits import first_visit_cpu
    from benchmarks.new_settings import new_settings_cpu
    from devtools.appserver import AppServer

    not_started = AppServer()  # refused before it is used
    for measure in (first_visit_cpu, new_settings_cpu):
        with pytest.raises(ValueError, match="profile a fresh server, not a running one"):
            measure(profile=Path("profile"), server=not_started)


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


def test_the_idle_poll_benchmark_times_a_round_and_the_votes_reaching_every_screen(tmp_path):
    """Three students and a lecturer on one process: the students' asks of the watcher's route are answered
    without a fragment run while no round is open; the round's opening and its reveal are each seen on all three
    screens, after the moment they were written to the store; every vote is recorded, on the student's screen and
    on the presenter's count, and the presenter's total, the store's and the students' own record agree."""
    from benchmarks.poll_idle import KEY, PAGE, one_count
    from benchmarks.protocol import page_hashes
    from devtools.appserver import AppServer

    with AppServer(env={"ATTENTION_POLL_DATA_DIR": str(tmp_path), "ATTENTION_PRESENTER_KEY": KEY}) as server:
        figures = one_count(server.url, [server.proc.pid], page_hashes(server.url)[PAGE], students=3, seconds=4.0,
                            data=tmp_path, key=KEY, vote_spread_s=3.0, changers=0.5)
    assert figures["ticks"] > 0 and figures["fragment_runs_idle"] == 0 and figures["exceptions"] == 0
    assert figures["fragment_runs"] >= 2 * 3  # the open and the reveal, on each screen
    for event in ("open", "reveal"):
        assert figures[event]["reached"] == figures[event]["of"] == 3
        assert 0 < figures[event]["p50_s"] <= figures[event]["p95_s"] < 11.0
    assert figures["votes"] >= 3 and figures["votes_not_recorded"] == 0
    assert figures["vote_to_screen"]["reached"] == figures["votes"]
    assert figures["vote_to_presenter"]["reached"] == 3
    assert figures["presenter_total"] == figures["store_total"] == figures["students_own_total"] == 3
    assert figures["store_matches_students"] and figures["totals_agree"]


def test_the_memory_benchmarks_class_can_be_put_on_chosen_pages():
    from benchmarks.memory import class_pages

    hashes = {"": "h0", "exercise": "h1", "multi_head": "h2", "transformer_block": "h3"}
    assert class_pages(hashes) == ["", "multi_head", "transformer_block"]
    assert class_pages(hashes, ["transformer_block"]) == ["transformer_block"]
    with pytest.raises(ValueError, match="no page nowhere"):
        class_pages(hashes, ["nowhere"])


def test_the_memory_benchmark_sums_the_whole_process_tree():
    import os
    import subprocess
    import sys

    from benchmarks.memory import rollup, tree

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert child.pid in tree(os.getpid()) and tree(os.getpid())[0] == os.getpid()
        assert rollup(child.pid)["Pss"] > 0
    finally:
        child.kill()
        child.wait()


def test_the_memory_benchmark_presses_check_my_code_and_counts_the_checkers_processes():
    """A class of one, whose check passes, and a pair of hogs, whose checks fail; the worker and its children are
    in the tree's figures, the worst case adds the budget of two children."""
    from benchmarks.memory import measure, table
    from exercise.limits import MEMORY_BUDGET_BYTES

    figures = measure("class", students=1, minutes=0.1, hog_pairs=1, steps=0, seed=0)
    assert figures["checks"] == {"failed": 2, "passed": 1}, figures["checks"]
    assert figures["processes_peak"] >= 3  # the server, the worker, at least one child
    assert figures["tree_pss_peak_mb"] > figures["server_and_worker_pss_peak_mb"] > figures["server_pss_peak_mb"] > 0
    assert figures["worst_case_mb"] > figures["server_and_worker_pss_peak_mb"] + 2 * MEMORY_BUDGET_BYTES / 1e6
    assert "tree_pss_peak_mb" in table([figures])


def test_the_memory_benchmarks_lecturer_visits_every_page_and_checks_once():
    from benchmarks.memory import measure

    figures = measure("lecturer", students=0, minutes=0, hog_pairs=0, steps=1, seed=0)
    assert figures["checks"] == {"passed": 1}, figures["checks"]
    assert figures["tree_pss_peak_mb"] >= figures["server_and_worker_pss_peak_mb"] > figures["server_pss_peak_mb"] > 0


def test_the_floor_benchmark_steps_a_bare_fragment_and_one_with_elements():
    """`benchmarks.floor`: every step of the bare page reaches the server and comes back with the elements it asked
    for (the benchmark checks each answer); the figures are CPU times, and the slope is per element."""
    from benchmarks.floor import floor_cpu, slope

    cpu = floor_cpu([0, 3], steps=5)
    assert set(cpu) == {0, 3} and all(ms >= 0 for ms in cpu.values())
    assert slope({0: 1.0, 10: 4.0, 20: 7.0}) == pytest.approx(0.3)


def test_a_hall_of_students_making_a_set_number_of_steps_in_clouds_box():
    """With `steps`, each student leaves after that many steps (long before the time is up); every step's wait
    before its run started is part of the step; the server ran in Cloud's box where this machine can make one."""
    from benchmarks.load import one_hall
    from devtools.box import Box

    figures = one_hall(students=4, minutes=0.5, arrival_s=0.2, seed=0, regime="jump", steps=1,
                       box=Box.available(), trained=False)  # as above
    assert figures["failed_sessions"] == 0 and figures["exceptions"] == 0, figures
    assert 1 <= figures["steps"] <= 4
    assert 0 < figures["wait_p50_ms"] <= figures["step_p50_ms"]
    assert figures["wait_p95_ms"] <= figures["step_max_ms"]
    assert figures["steps_per_s"] > 0 and figures["server_cpu_share"] > 0 and figures["clients_cpu_share"] > 0
    if Box.available():
        assert figures["box_throttled_s"] >= 0


@pytest.mark.browser
def test_a_first_visit_can_fetch_the_front_end_as_a_browser_does(hall_server):
    """With `front_end`, each student's first visit fetches the files Chromium fetched from that server (Streamlit's
    front end: megabytes of scripts, styles and fonts) before its websocket opens; without it, only the HTML."""
    from benchmarks.load import one_hall
    from devtools.browser import CHROMIUM

    if not Path(CHROMIUM).exists():  # the benchmarks record the full browser's fetches, even where the shell is
        pytest.skip(f"the front end's files are recorded from Chromium, not installed at {CHROMIUM}")
    with_files = one_hall(students=3, minutes=0.05, arrival_s=0.2, seed=0, regime="jump", steps=1, front_end=True,
                          server=hall_server)
    assert with_files["failed_sessions"] == 0 and with_files["exceptions"] == 0, with_files
    assert with_files["front_end_mb_per_visit"] > 1 and with_files["app_pids"] == [hall_server.proc.pid], with_files
    without = one_hall(students=3, minutes=0.05, arrival_s=0.2, seed=0, regime="jump", steps=1, server=hall_server)
    assert without["front_end_mb_per_visit"] == 0


def test_the_sampler_sees_each_thread_and_sums_by_function(tmp_path, capsys):
    """py-spy from outside: the GIL's holder in one file, every thread (idle ones too) in the other; a thread's
    name comes without the numbers that tell threads of one kind apart."""
    import subprocess
    import sys

    from benchmarks.profiling import Sampler, by_thread, summarise

    # Sampling starts once the thread runs: the interpreter's start-up, before `threading` can name a thread, is
    # not what this test is about, and on a busy machine it can outlast the thread's work.
    child = subprocess.Popen([sys.executable, "-c", (
        "import threading, time\n"
        "def spin():\n    t = time.time()\n    while time.time() - t < 2: sum(range(1000))\n"
        "threading.Thread(target=spin, name='busy-worker_7').start()\n"
        "print('started', flush=True)\n"
        "time.sleep(2.5)\n")], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "started\n"
    out = tmp_path / "p.raw"
    with Sampler(child.pid, out) as sampler:
        child.wait(30)
        sampler.wait(30)
    on_the_gil, every_thread = by_thread(out), by_thread(Sampler.idle_file(out))
    assert on_the_gil.most_common(1)[0][0] == "busy-worker"
    assert {"busy-worker", "MainThread"} <= set(every_thread)
    summarise(out, top=5)
    printed = capsys.readouterr().out
    assert "busy-worker" in printed and "spin (<string>:4)" in printed


def test_a_thread_py_spy_could_not_name_is_called_unnamed():
    from benchmarks.profiling import UNNAMED, thread_kind, thread_name

    assert thread_name("thread (7141): busy-worker_7") == "busy-worker_7"
    assert thread_name("thread (0x7f3a): ThreadPoolExecutor-0_3") == "ThreadPoolExecutor-0_3"
    assert thread_name("thread (7134)") == UNNAMED == thread_kind(thread_name("thread (7134)"))


def test_the_train_storm_follows_every_training_to_the_end_and_sees_the_line():
    """Two students press Train on the decoder at once, at settings of their own (the shortest run), while one other
    browses: both trainings finish, the second student is told their place in line, and the table gives every
    figure."""
    from benchmarks.train_storm import STORM_KEYS, one_storm, storm_summary, storm_table

    figures = one_storm(trainers=2, others=1, pages=("decoder",), arrival_s=0.0, steps=100)  # the page's shortest run
    assert figures["failed_sessions"] == 0 and figures["exceptions"] == 0, figures
    assert figures["finished"] == 2 and figures["by_page"] == {"decoder": 2}
    assert figures["places_seen"] >= 1 and figures["line_wait_max_s"] > 0
    assert figures["trained_p50_s"] <= figures["trained_max_s"] and figures["tree_pss_peak_mb"] > 0
    assert 0 < figures["training_cpu_s"] < figures["server_cpu_s"]  # the runs' own, read from the trained page
    printed = storm_table({"storm": storm_summary([figures])})
    assert all(k in printed for k in STORM_KEYS)


def test_the_class_rounds_benchmark_counts_every_record_it_times(tmp_path):
    """`benchmarks.exercise_round`: every timed record is in the round, one row per student (its `exact`)."""
    from benchmarks import exercise_round

    found = exercise_round.measure(f"sqlite:///{tmp_path}/poll.sqlite3", students=12, checks=3, repeats=1)
    (run,) = found["runs"]
    assert run["records"] == 36 and run["exact"] and found["exact"]
    assert set(found["median"]) == {"cpu_ms", "wall_ms"} and found["target_cpu_ms"] == 5.0


def test_the_class_round_room_benchmark_sees_every_check_on_the_panel(tmp_path):
    """`benchmarks.exercise_room` on two processes behind nginx and SQLite, four students checking twice: every
    check answered in both phases, each student's first check of the round and each pass reached the lecturer's
    panel, and the panel's last counts equal the store's, which hold every check of the round."""
    from benchmarks.exercise_room import measure
    from devtools.cluster import INSTALL_HINT, nginx_binary

    if nginx_binary() is None:
        pytest.skip(INSTALL_HINT)
    found = measure(students=4, checks=2, spread_s=4.0, processes=2, sqlite=True)
    assert found["exceptions"] == 0
    assert found["no_round"]["checks"] == found["round"]["checks"] == 8
    assert found["no_round"]["answer"]["reached"] == found["round"]["answer"]["reached"] == 8
    assert found["first_check_to_panel"]["reached"] == found["first_check_to_panel"]["of"] == 4
    assert found["pass_to_panel"]["reached"] == found["pass_to_panel"]["of"] == 4
    assert found["panel"] == {"Checked": 4, "Pass now": 4}
    assert found["store"] == {"Checked": 4, "Pass now": 4, "attempts": 8}
    assert found["exact"]


def test_a_servers_cpu_is_read_to_the_microsecond_every_thread_included():
    """`cpu_s` of a child that burns CPU in a thread of its own, then reports its `time.process_time()`: the same
    to 0.5 ms, three times running (clock ticks of 10 ms would miss by up to 10 ms)."""
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, threading, time\n"
        "def burn(s):\n"
        "    end = time.thread_time() + s\n"
        "    while time.thread_time() < end: pass\n"
        "for k in range(3):\n"
        "    t = threading.Thread(target=burn, args=(0.0137 + 0.011 * k,)); t.start(); t.join()\n"
        "    print(time.process_time(), flush=True)\n"
        "    sys.stdin.readline()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(3):
            reported = float(child.stdout.readline())
            assert cpu_s(child.pid) == pytest.approx(reported, abs=5e-4)
            child.stdin.write("\n")
            child.stdin.flush()
    finally:
        child.kill()
        child.wait()
