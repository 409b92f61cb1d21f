"""`ui.shared_runs`: one run per setting for every session; a run in progress is never thrown away, memory is
bounded by the finished runs (the least recently used go first)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from ui.shared_runs import SharedRuns
from ui.work_line import WorkLine

WAIT_S = 60.0  # a bound on any wait here; nothing is timed


@dataclass(frozen=True)
class Setting:
    seed: int
    steps: int = 12


@dataclass
class Result:
    steps_done: int = 0
    total: int = 12
    first_steps: list[int] = field(default_factory=list)  # the step each chunk started from

    @property
    def complete(self) -> bool:
        return self.steps_done >= self.total


class CountingTrainer:
    """A resumable trainer of `Setting`: a step per chunk; it counts how often each setting was started."""

    made: Counter = Counter()
    guard = threading.Lock()

    def __init__(self, config: Setting) -> None:
        with CountingTrainer.guard:
            CountingTrainer.made[config] += 1
        self.config = config
        self.result = Result(total=config.steps)

    def run(self, max_seconds: float | None = None) -> Result:
        self.result.first_steps.append(self.result.steps_done)
        time.sleep(0.001)  # another session's chunk may start meanwhile, as on a busy server
        self.result.steps_done += 1
        return self.result


def started(target, name: str) -> threading.Thread:
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def each_finished_once(session, settings: list[Setting], finished: dict[Setting, Result]) -> None:
    """Run `session` for every setting at once, each in a thread: every run finished, each made once and trained
    from step 0 to its end without starting again."""
    threads = [started(lambda s=s: session(s), f"session {s.seed}") for s in settings]
    for t in threads:
        t.join(WAIT_S)
    assert set(finished) == set(settings), f"{len(finished)} of {len(settings)} finished"
    assert all(CountingTrainer.made[s] == 1 for s in settings), CountingTrainer.made
    assert all(r.first_steps == list(range(r.total)) for r in finished.values())


def test_more_settings_in_progress_than_kept_runs_all_finish_and_none_starts_again():
    """Ten sessions train ten settings at once, chunk by chunk, where only four finished runs are kept: a run in
    progress is never dropped for another's, so each is made once and finishes."""
    CountingTrainer.made.clear()
    runs = SharedRuns(CountingTrainer, 4)
    settings = [Setting(seed) for seed in range(10)]
    finished: dict[Setting, Result] = {}
    deadline = time.monotonic() + WAIT_S

    def session(setting: Setting) -> None:
        while time.monotonic() < deadline:
            trainer = runs.advance(setting, 0.001)
            if trainer.result.complete:
                finished[setting] = trainer.result
                return

    each_finished_once(session, settings, finished)


def test_more_settings_than_slots_wait_in_line_and_the_finished_runs_are_the_ones_dropped():
    """Ten sessions ask for ten settings at once, two slots: at most two train at a time, the others wait in line;
    every run finishes, none starts again from step 0, and of the finished runs the least recently used go."""
    CountingTrainer.made.clear()
    line, runs = WorkLine(at_once=2), SharedRuns(CountingTrainer, 3)
    settings = [Setting(seed, steps=6) for seed in range(10)]
    finished: dict[Setting, Result] = {}
    training_at_once, waited = [], Counter()
    guard = threading.Lock()

    def session(setting: Setting) -> None:
        with line.place(setting, "fake step", setting.steps) as place:
            for _ in place.chunks(lambda standing: waited.update([setting]), poll_s=0.01):
                with guard:
                    training_at_once.append(len(line.training()))
                trainer = runs.advance(setting, 0.001)
                place.progress(trainer.result.steps_done)
                if trainer.result.complete:
                    finished[setting] = trainer.result
                    return

    each_finished_once(session, settings, finished)
    assert max(training_at_once) == 2 and waited, "the line let more than two train, or nobody waited"
    kept = runs.kept()
    assert len(kept) == 3 and all(runs.existing(s).result.complete for s in kept)
    assert line.training() == [] and line.waiting() == []


def test_an_unfinished_run_left_alone_is_dropped_like_a_finished_one_only_once_idle():
    now = [0.0]
    runs = SharedRuns(CountingTrainer, 1, idle_s=10.0, clock=lambda: now[0])
    left, finished, other = Setting(100), Setting(101, steps=1), Setting(102, steps=1)
    runs.advance(left, 0.001)  # one step of twelve, then its student goes
    runs.advance(finished, 0.001)
    assert runs.kept() == [left, finished]  # the unfinished one is in progress for ten seconds
    now[0] = 11.0
    runs.advance(other, 0.001)
    assert runs.kept() == [other]  # the left run and the older finished one went, the newest is kept
