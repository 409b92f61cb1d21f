"""The load benchmark's report (`python -m benchmarks.load`): the figures of each run, their medians over repeats,
and the table that puts the layouts side by side with the targets."""

from __future__ import annotations

import statistics

TARGETS = {"step_p50_ms": 250.0, "step_p95_ms": 1000.0, "cpu_ms_per_step": 20.0, "rss_mb": 1024.0,
           "first_visit_p95_s": 5.0}
KEYS = ["steps", "step_p50_ms", "step_p95_ms", "step_max_ms", "wait_p50_ms", "wait_p95_ms", "first_visit_p50_s",
        "first_visit_p95_s", "steps_per_s", "server_cpu_share", "clients_cpu_share", "box_throttled_s",
        "cpu_ms_per_step", "rss_mb", "exceptions", "failed_sessions", "interrupted_runs", "nginx_5xx", "taken_out",
        "python_loop_s"]


def summary_of(runs: list[dict]) -> dict:
    """The median of each figure over the runs of one layout and regime; cross-talk must be absent from every run."""
    summary = {k: statistics.median(r[k] for r in runs) for k in KEYS}
    summary["no_cross_talk"] = all(r["no_cross_talk"] for r in runs)
    return summary


def layout_name(regime: str, processes: int, machines: int = 1) -> str:
    """A column's heading: how the students step, and on how many processes (and machines)."""
    if machines > 1:
        return f"{regime}, {processes} on {machines} machines behind nginx"
    return f"{regime}, " + ("1 process" if processes == 1 else f"{processes} behind nginx")


def table(summaries: dict[str, dict]) -> str:
    """The medians side by side, one column per regime and layout (`layout_name`), with the targets (which apply
    to one process)."""
    width = max(16, *(len(h) + 2 for h in summaries))
    lines = [f"  {'':<20}" + "".join(f"{h:>{width}}" for h in summaries) + "  target (one process)"]
    for k in KEYS + ["no_cross_talk"]:
        cells = "".join(f"{v[k]:>{width}.4g}" if isinstance(v[k], float) else f"{v[k]!s:>{width}}"
                        for v in summaries.values())
        target = TARGETS.get(k)
        lines.append(f"  {k:<20}{cells}" + (f"  <= {target:g}" if target is not None else ""))
    return "\n".join(lines)
