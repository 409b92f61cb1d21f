"""The decoder page's sampling knobs, one student alone on a fresh server after training: the server's CPU per
step to a setting never computed (temperature, top-k, top-p, the draw's seed, the words written), each knob in
turn, `steps` steps each, the others where the earlier ones left them.

    python -m benchmarks.decoder [--seed 0] [--steps 8]

The server's CPU is read from /proc in clock ticks (10 ms), so the figure is a mean over the steps, not a median.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks.new_settings import step_to_a_new_value
from benchmarks.protocol import Student, cpu_s, page_hashes, run_coroutine, train_before_class
from devtools.appserver import AppServer

KNOBS = ("temp", "top_k", "top_p", "draw", "words")
#: Seconds left after training for the server's background warm-up to finish before the steps are counted.
SETTLE_S = 20.0


def knob_cpu(seed: int = 0, steps: int = 8) -> dict[str, float]:
    """Mean server CPU (ms) per step to a new setting, for each knob, and over all of them (``"all"``)."""
    with AppServer() as server:
        hashes = page_hashes(server.url)
        train_before_class(server.url, hashes)
        time.sleep(SETTLE_S)
        pid = server.proc.pid

        async def run() -> dict[str, list[float]]:
            rng = random.Random(seed)
            student = Student(server.url, hashes["decoder"], rng)
            await student.connect()
            try:
                _, seen = await student.rerun()
                student.absorb(seen)
                per_knob: dict[str, list[float]] = {}
                for name in KNOBS:
                    visited, costs = set(), []
                    for _ in range(steps):
                        before = cpu_s(pid)
                        seen = await step_to_a_new_value(student, name, visited, rng)
                        if seen is None:
                            break
                        if seen.exceptions:
                            raise RuntimeError(f"the decoder page raised: {seen.exception_texts}")
                        costs.append((cpu_s(pid) - before) * 1e3)
                    per_knob[name] = costs
                return per_knob
            finally:
                await student.ws.close()

        per_knob = run_coroutine(run())
    every = [c for costs in per_knob.values() for c in costs]
    return {**{k: statistics.mean(v) for k, v in per_knob.items() if v}, "all": statistics.mean(every)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.decoder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    figures = knob_cpu(args.seed, args.steps)
    print("  ".join(f"{k} {v:.1f} ms" for k, v in figures.items()))


if __name__ == "__main__":
    main()
