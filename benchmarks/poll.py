"""Benchmark the class poll's store alone: a class votes on one question within a spread, some change their vote,
the lecturer locks, and every student then tries once more.

    python -m benchmarks.poll [--voters 300] [--spread 20] [--changers 0.3] [--processes 2] [--repeats 3]
                              [--database-url postgresql://...] [--out benchmarks/poll_results.json]

Each voter is a thread in one of `processes` processes (as students are sessions spread over app processes),
sending its vote at a seeded random moment in ``[0, spread)`` seconds, a `changers` share of them a second,
different one later in the spread. After the spread the lecturer locks; every voter then sends one more vote,
which must be refused. Against SQLite in a temporary directory, or the database at `--database-url` (a fresh
round on a page of its own). Reported per run and as medians: votes lost (a voter's stored answer is not their
last accepted one), duplicated (more voters counted than voted), accepted after the lock, failures
(`DatabaseUnavailableError`), and the latency of a vote (send to accepted) p50/p95/max. Nothing asserts on time.
Every process and thread stops by itself: the run ends at `spread` plus a fixed grace, or reports a hung worker.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import random
import secrets
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.timing import percentile
from poll import DatabaseUnavailableError, PollError, Question, RoundLockedError, open_store

QUESTION = Question(quiz="poll_benchmark", text="Which weight is largest?", options=("A", "B", "C", "D"), answer="B",
                    explanation="B's score is the largest.", settings="seed=0")
#: How long after the spread the workers have to finish before the run reports them hung.
GRACE_S = 60.0
TARGETS = {"lost": 0, "duplicated": 0, "accepted_after_lock": 0}


def voter_token(process: int, voter: int) -> str:
    return f"bench_{process:03d}_{voter:05d}_{'0' * 12}"


def one_voter(store, round_id: str, token: str, moments: list[float], t0: float, seed: int, locked,
              records: list[tuple]) -> None:
    """Send this voter's votes at `moments` (s after `t0`), then one more once the lock is seen."""
    chooser = random.Random(seed)
    voter = store.voter_hasher().voter(token)
    option = None
    for moment in [*moments, None]:
        if moment is None:
            locked.wait(GRACE_S)
        else:
            time.sleep(max(0.0, t0 + moment - time.monotonic()))
        option = chooser.choice([o for o in QUESTION.options if o != option])
        lock_seen, sent = locked.is_set(), time.perf_counter()
        try:
            store.vote(round_id, voter, option)
            outcome = "accepted"
        except RoundLockedError:
            outcome = "refused"
        except DatabaseUnavailableError:
            outcome = "failed"
        records.append((token, option, outcome, lock_seen, time.perf_counter() - sent))


def voter_process(url: str, round_id: str, process: int, voters: int, spread_s: float, changers: float, seed: int,
                  start, locked, results) -> None:
    """`voters` voter threads; puts their records on `results` when all are done."""
    store = open_store(url)
    store.voter_hasher()  # made once, before the threads share it
    plan = random.Random(f"{seed}-{process}")
    records: list[tuple] = []
    threads = []
    start.wait()
    t0 = time.monotonic()
    for voter in range(voters):
        first = plan.uniform(0, spread_s * 0.8)
        moments = [first, plan.uniform(first, spread_s)] if plan.random() < changers else [first]
        threads.append(threading.Thread(target=one_voter, daemon=True, args=(
            store, round_id, voter_token(process, voter), moments, t0, plan.randrange(2**31), locked, records)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(spread_s + 2 * GRACE_S)
    results.put(records)


def audit(store, round_id: str, records: list[tuple]) -> dict[str, int]:
    """Lost, duplicated and accepted-after-lock votes, from the records and the store's own reading."""
    last_accepted = {token: option for token, option, outcome, _, _ in records if outcome == "accepted"}
    hasher = store.voter_hasher()
    lost = sum(store.vote_of(round_id, hasher.voter(token)) != option for token, option in last_accepted.items())
    total = store.counts(round_id).total
    return {"lost": lost, "duplicated": max(0, total - len(last_accepted)),
            "accepted_after_lock": sum(outcome == "accepted" and lock_seen for _, _, outcome, lock_seen, _ in records)}


def one_poll(url: str, voters: int, spread_s: float, changers: float, processes: int, seed: int) -> dict[str, float]:
    """One class voting on a fresh round; the figures of the module's docstring."""
    store = open_store(url)
    opened = store.open_round(f"bench_{secrets.token_hex(4)}", QUESTION)
    context = multiprocessing.get_context("spawn")
    start, locked, results = context.Barrier(processes + 1), context.Event(), context.Queue()
    shares = [voters // processes + (p < voters % processes) for p in range(processes)]
    workers = [context.Process(target=voter_process, daemon=True, args=(
        url, opened.id, p, shares[p], spread_s, changers, seed, start, locked, results)) for p in range(processes)]
    for worker in workers:
        worker.start()
    start.wait(timeout=GRACE_S)
    began = time.monotonic()
    time.sleep(spread_s + 1.0)  # every vote of the spread sent (a slow one may still be on its way)
    store.lock(opened.id)
    locked.set()
    records = []
    try:
        for _ in workers:
            records.extend(results.get(timeout=spread_s + 2 * GRACE_S))
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
    latencies = [latency for *_, outcome, _, latency in records if outcome == "accepted"]
    return {"voters": voters, "votes_sent": len(records),
            "accepted": len(latencies),
            "refused_after_lock": sum(outcome == "refused" for _, _, outcome, _, _ in records),
            "failed": sum(outcome == "failed" for _, _, outcome, _, _ in records),
            **audit(store, opened.id, records),
            "vote_p50_ms": 1000 * percentile(latencies, 0.5), "vote_p95_ms": 1000 * percentile(latencies, 0.95),
            "vote_max_ms": 1000 * max(latencies, default=float("nan")), "run_s": time.monotonic() - began}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.poll", description=__doc__.split("\n\n")[0])
    parser.add_argument("--voters", type=int, default=300)
    parser.add_argument("--spread", type=float, default=20.0, help="seconds over which the votes arrive")
    parser.add_argument("--changers", type=float, default=0.3, help="share of voters who change their vote")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--database-url", default=None, help="postgresql://... (default: SQLite in a temporary dir)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/poll_results.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attention-poll-bench-") as scratch:
        url = args.database_url or f"sqlite:///{scratch}/poll.sqlite3"
        try:
            runs = [one_poll(url, args.voters, args.spread, args.changers, args.processes, seed)
                    for seed in range(args.repeats)]
        except PollError as error:
            raise SystemExit(f"the poll's store failed: {error}") from error
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    database = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{args.voters} voters on one question within {args.spread:g} s, {args.changers:.0%} changing their vote, "
          f"{args.processes} processes, {database}, {args.repeats} runs")
    print(f"{'figure':24} " + " ".join(f"{'run ' + str(i):>9}" for i in range(len(runs))) + f" {'median':>9}")
    for key in runs[0]:
        print(f"{key:24} " + " ".join(f"{run[key]:9.1f}" for run in runs) + f" {medians[key]:9.1f}")
    print("targets: 0 lost, 0 duplicated, 0 accepted after the lock")
    args.out.write_text(json.dumps({"machine": platform.platform(), "database": database, "runs": runs,
                                    "medians": medians, "targets": TARGETS}, indent=1))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
