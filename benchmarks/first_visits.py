"""What a first visit costs the server: one new student after another opens each page (its HTML, the websocket, the
page's first run at settings already computed), while one other student's session stays open, as in a class.

The open session matters: Streamlit empties its cache of compiled page scripts whenever its last session closes,
so visits made with no other session open would each compile their page again, which a class never pays. The
front end's files are not fetched (`benchmarks.front_end` measures them).

    python -m benchmarks.first_visits [--rounds 15] [--no-kept-session] [--profile FILE]
                                      [--out benchmarks/first_visits_results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
from pathlib import Path

from benchmarks.profiling import Sampler
from benchmarks.protocol import Student, cpu_s, first_run, page_hashes, run_coroutine, train_before_class
from benchmarks.timing import python_loop_s
from devtools.appserver import AppServer, running_or_fresh


async def _rounds(url: str, pid: int, hashes: dict[str, str], rounds: int,
                  keep_session: bool) -> dict[str, list[float]]:
    """`rounds` first visits to every page in turn, with one session kept open if `keep_session`: ms of server CPU
    per visit."""
    kept = Student(url, hashes[""], random.Random(1))
    if keep_session:
        await kept.connect()
        await kept.rerun()
    per_page: dict[str, list[float]] = {path: [] for path in hashes}
    try:
        for _ in range(rounds):
            for path, page_hash in sorted(hashes.items()):
                before = cpu_s(pid)
                if (await first_run(url, page_hash)).exceptions:
                    raise RuntimeError(f"the first visit of /{path} showed an exception")
                await asyncio.sleep(0.05)  # the closed session's last messages
                per_page[path].append((cpu_s(pid) - before) * 1e3)
    finally:
        if kept.ws is not None:
            await kept.ws.close()
    return per_page


def first_visit_cpu(rounds: int = 15, warm_rounds: int = 2, profile: Path | None = None,
                    keep_session: bool = True, server: AppServer | None = None) -> dict[str, list[float]]:
    """On a fresh server, after the lecturer's training and `warm_rounds` rounds of visits (imports, caches): `rounds`
    first visits to every page. Server CPU per visit in ms, by page url path ("" for the landing page), at /proc's
    resolution (10 ms here), so take means over many visits. `profile`: py-spy samples the measured rounds.
    `keep_session=False` keeps no other session open, to show what that costs. With `server`, the visits are made
    on that running server, which is left running (what it served before is part of the warm-up), without
    `profile`."""
    with running_or_fresh(server, profiled=profile is not None) as server, contextlib.ExitStack() as sampling:
        hashes = page_hashes(server.url)
        train_before_class(server.url, hashes)
        pid = server.proc.pid
        run_coroutine(_rounds(server.url, pid, hashes, warm_rounds, keep_session))
        sampler = None if profile is None else sampling.enter_context(Sampler(pid, profile))
        figures = run_coroutine(_rounds(server.url, pid, hashes, rounds, keep_session))
        if sampler is not None:  # py-spy writes its files when the process it samples exits
            server.stop()
            sampler.wait(60)
    return figures


def every_visit(figures: dict[str, list[float]]) -> list[float]:
    """The ms of every visit, whatever its page."""
    return [ms for visits in figures.values() for ms in visits]


def visit_table(figures: dict[str, list[float]]) -> str:
    """A line per page (mean ms of CPU a first visit), then the mean over every visit."""
    lines = [f"{path or '(home)':22s} {statistics.mean(ms):6.1f} ms" for path, ms in sorted(figures.items())]
    every = every_visit(figures)
    lines.append(f"{'mean over every visit':22s} {statistics.mean(every):6.1f} ms ({len(every)} visits)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_visits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="first visits to every page (after two to warm up)")
    parser.add_argument("--profile", type=Path, help="sample the server with py-spy into this file (and FILE.idle)")
    parser.add_argument("--no-kept-session", action="store_true",
                        help="keep no other session open (each visit then compiles its page again)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/first_visits_results.json"))
    args = parser.parse_args()
    loop_s = python_loop_s()
    figures = first_visit_cpu(args.rounds, profile=args.profile, keep_session=not args.no_kept_session)
    print(visit_table(figures))
    args.out.write_text(json.dumps({"python_loop_s": loop_s, "rounds": args.rounds,
                                    "kept_session": not args.no_kept_session,
                                    "mean_ms": statistics.mean(every_visit(figures)),
                                    "ms_by_page": figures}, indent=1))


if __name__ == "__main__":
    main()
