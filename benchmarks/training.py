"""Benchmark the training page: time to learn, progress-update intervals, page reruns.

    python -m benchmarks.training [--seeds 0 1 2] [--no-browser] [--no-reruns] [--out benchmarks/training_results.json]

Measures, with the page's default settings (reverse, T = 8, vocab 10, d_model 32, 2 heads, 1 layer,
sinusoidal positions, 400 steps, lr 3e-3):

* the wall time from pressing Train (building the trainer) to the first checkpoint at which the
  held-out per-token accuracy is >= 95 %, run exactly as the page runs it (chunks of
  ``UPDATE_EVERY_S``); target: <= 20 s on a 2-core machine;
* ms per training step with 1 and 2 torch threads (why `training.NUM_THREADS` is what it is);
* the intervals between progress reports: every `on_step` callback, every page chunk, and (unless
  ``--no-browser``) every change of the progress text in a real browser; target: <= 0.5 s;
* page reruns (AppTest, median after one warm-up) untrained, trained and at the heaviest extreme,
  next to the worked-example page measured the same way as a yardstick for the machine's load.

Prints a table and writes the figures as JSON. Nothing asserts on time: targets are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.timing import median_ms, time_reruns
from devtools.appserver import ROOT
from training.config import NUM_THREADS, TrainConfig
from training.trainer import Progress, Trainer, deterministic_torch

PAGE_UPDATE_S = 0.25  # app_pages/training.py UPDATE_EVERY_S
TARGETS = {"time_to_95_s": 20.0, "progress_interval_s": 0.5, "rerun_default_ms": 100, "rerun_heaviest_ms": 300}
HEAVIEST = dict(seq_len="12", vocab="10", d_model="64", heads="8", layers="2", steps="50", task="sort",
                pos="learned")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def ms(x: float) -> float:
    return round(x * 1000, 1)


def step_times(config: TrainConfig, threads: int, steps: int = 60, warmup: int = 10) -> float:
    """Median ms per optimisation step (blocks of 10) with `threads` torch threads."""
    trainer = Trainer(config)
    with deterministic_torch(num_threads=threads):
        for _ in range(warmup):
            trainer.step()
        blocks = []
        for _ in range(steps // 10):
            t = time.perf_counter()
            for _ in range(10):
                trainer.step()
            blocks.append((time.perf_counter() - t) / 10)
    return ms(statistics.median(blocks))


def time_to_accuracy(config: TrainConfig, threshold: float = 0.95) -> dict:
    """Train `config` as the page does (chunks of PAGE_UPDATE_S) and time everything."""
    callbacks: list[float] = []
    chunks: list[float] = []
    reached: list[tuple[int, float]] = []
    t0 = time.perf_counter()

    def on_step(p: Progress) -> None:
        now = time.perf_counter()
        callbacks.append(now)
        if not reached and p.eval_accuracy >= threshold:  # the latest checkpoint's held-out accuracy
            reached.append((p.step, now - t0))

    trainer = Trainer(config)
    built = time.perf_counter() - t0
    last = time.perf_counter()
    while not trainer.result.complete:
        trainer.run(max_seconds=PAGE_UPDATE_S, on_step=on_step)
        now = time.perf_counter()
        chunks.append(now - last)
        last = now
    reached_at = reached[0] if reached else None
    total = time.perf_counter() - t0
    r = trainer.result
    gaps = [b - a for a, b in zip(callbacks, callbacks[1:], strict=False)]
    return {
        "seed": config.seed,
        "build_s": round(built, 3),
        "step_at_95": reached_at[0] if reached_at else None,
        "time_to_95_s": round(reached_at[1], 2) if reached_at else None,
        "total_s": round(total, 2),
        "final_accuracy": round(r.eval_accuracy[-1], 4),
        "final_sequence_accuracy": round(r.eval_sequence_accuracy[-1], 4),
        "on_step_interval_ms": {"median": ms(statistics.median(gaps)), "max": ms(max(gaps))},
        "chunk_interval_ms": {"median": ms(statistics.median(chunks)), "max": ms(max(chunks))},
    }


def page_reruns(repeats: int) -> dict:
    """AppTest rerun medians of the training page (untrained, trained, heaviest) and of the worked example."""
    from tests.helpers.apptest import run_page

    def median_rerun(at) -> float:
        return median_ms(time_reruns(at, repeats))

    out = {"worked_example_ms": median_rerun(run_page("app_pages/worked_example.py"))}
    at = run_page("app_pages/training.py")
    out["untrained_default_ms"] = median_rerun(at)
    at.button(key="train").click().run(timeout=600)
    out["trained_default_ms"] = median_rerun(at)
    options = at.select_slider(key="ckpt").options
    samples = []
    for i in range(repeats):  # scrubbing the checkpoint slider: a display control, must not retrain
        at.select_slider(key="ckpt").set_value(int(options[(3 * i) % len(options)]))
        t = time.perf_counter()
        at.run()
        samples.append(time.perf_counter() - t)
    out["scrub_checkpoint_ms"] = ms(statistics.median(samples))
    at = run_page("app_pages/training.py", **HEAVIEST)
    at.button(key="train").click().run(timeout=600)
    out["trained_heaviest_ms"] = median_rerun(at)
    return out


def browser_progress(config_query: str = "") -> dict:
    """Press Train in headless Chromium and record when the progress text changes (a MutationObserver)."""
    from playwright.sync_api import sync_playwright

    from devtools.appserver import AppServer
    from devtools.browser import launch, settle

    observer = """() => {
      window.__changes = []; window.__last = null;
      const tick = () => {
        const bar = document.querySelector('[data-testid="stProgress"]');
        const text = bar ? bar.innerText : null;
        if (text !== window.__last) { window.__changes.push([performance.now(), text]); window.__last = text; }
        requestAnimationFrame(tick);
      };
      tick();
    }"""
    server = AppServer().start()
    try:
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(server.url + "/")
            settle(page)
            page.goto(f"{server.url}/training{config_query}")
            settle(page)
            page.evaluate(observer)
            page.locator('[data-testid="stMain"] [data-testid="stBaseButton-primary"]').first.click()
            page.wait_for_selector('[data-testid="stProgress"]', timeout=120_000)
            page.wait_for_selector('[data-testid="stMetric"]', timeout=600_000)
            changes = page.evaluate("() => window.__changes")
            browser.close()
    finally:
        server.stop()
    steps = [(t, s) for t, s in changes if s and s.startswith("step ")]
    gaps = [(b[0] - a[0]) / 1000 for a, b in zip(steps, steps[1:], strict=False)]
    return {"progress_updates": len(steps),
            "interval_ms": {"median": ms(statistics.median(gaps)) if gaps else None,
                            "p90": ms(statistics.quantiles(gaps, n=10)[-1]) if len(gaps) > 1 else None,
                            "max": ms(max(gaps)) if gaps else None},
            "intervals_ms": [ms(g) for g in gaps],
            "last_text": steps[-1][1] if steps else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--no-reruns", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "training_results.json"))
    args = ap.parse_args()

    result: dict = {"machine": {"python": sys.version.split()[0], "torch": torch.__version__, "cpus": os.cpu_count(),
                                "platform": platform.platform(), "load_before": load()},
                    "targets": TARGETS, "num_threads": NUM_THREADS}
    default = TrainConfig()
    print(f"load average {result['machine']['load_before']} on {os.cpu_count()} CPUs; defaults: {default}")

    t = time.perf_counter()
    Trainer(TrainConfig(steps=1))  # the first Trainer in a process: model building, first torch calls
    result["cold_first_trainer_s"] = round(time.perf_counter() - t, 2)
    result["ms_per_step"] = {f"{n}_threads": step_times(default, n) for n in (1, 2)}
    print(f"first Trainer in a fresh process: {result['cold_first_trainer_s']} s; ms per step: {result['ms_per_step']}")

    runs = []
    for seed in args.seeds:
        row = time_to_accuracy(TrainConfig(seed=seed))
        runs.append(row)
        print(f"  seed {seed}: >= 95% at step {row['step_at_95']} after {row['time_to_95_s']} s; "
              f"{default.steps} steps in {row['total_s']} s; final {row['final_accuracy']:.1%}; "
              f"on_step every {row['on_step_interval_ms']['median']} ms (max {row['on_step_interval_ms']['max']}); "
              f"chunks every {row['chunk_interval_ms']['median']} ms (max {row['chunk_interval_ms']['max']})",
              flush=True)
    result["runs"] = runs
    reached = [r["time_to_95_s"] for r in runs if r["time_to_95_s"] is not None]
    result["time_to_95_s_median"] = statistics.median(reached) if reached else None
    result["time_to_95_s_max"] = max(reached) if reached else None

    if not args.no_browser:
        print("browser: pressing Train and watching the progress bar …", flush=True)
        result["browser"] = browser_progress()
        print(f"  {result['browser']['interval_ms']} over {result['browser']['progress_updates']} updates")
    if not args.no_reruns:
        print("page reruns (AppTest) …", flush=True)
        result["reruns"] = page_reruns(args.repeats)
        print(f"  {result['reruns']}")
    result["machine"]["load_after"] = load()

    print_table(result, args.seeds, default)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print("\nwritten to", args.out)



def print_table(result: dict, seeds: list[int], default: TrainConfig) -> None:
    """`result`'s figures as a Markdown table, each beside its target."""
    runs = result["runs"]
    print("\n| measure | value | target |")
    print("|---|---|---|")
    print(f"| time to >= 95% held-out accuracy (median / max over seeds {seeds}) | "
          f"{result['time_to_95_s_median']} s / {result['time_to_95_s_max']} s | <= 20 s |")
    print(f"| steps to >= 95% | {', '.join(str(r['step_at_95']) for r in runs)} | |")
    print(f"| full default run ({default.steps} steps) | {', '.join(str(r['total_s']) for r in runs)} s | |")
    print(f"| ms per step, 1 / 2 threads | {result['ms_per_step']['1_threads']} / "
          f"{result['ms_per_step']['2_threads']} | |")
    print(f"| first trainer in a fresh process | {result['cold_first_trainer_s']} s | |")
    worst_chunk = max(r["chunk_interval_ms"]["max"] for r in runs)
    worst_step = max(r["on_step_interval_ms"]["max"] for r in runs)
    print(f"| progress interval, on_step max / page chunk max | {worst_step} ms / {worst_chunk} ms | <= 500 ms |")
    if "browser" in result:
        b = result["browser"]["interval_ms"]
        print(f"| progress text in the browser, median / p90 / max interval | {b['median']} / {b['p90']} / "
              f"{b['max']} ms | <= 500 ms |")
    if "reruns" in result:
        rr = result["reruns"]
        print(f"| rerun untrained / trained / checkpoint scrub / heaviest (ms) | {rr['untrained_default_ms']} / "
              f"{rr['trained_default_ms']} / {rr['scrub_checkpoint_ms']} / {rr['trained_heaviest_ms']} | 100 / 300 |")
        print(f"| worked-example rerun, same conditions (yardstick) | {rr['worked_example_ms']} ms | |")
    print(f"| load average before / after | {result['machine']['load_before']} / {result['machine']['load_after']} "
          "| idle |")

if __name__ == "__main__":
    main()
