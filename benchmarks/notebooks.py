"""What a page's notebook costs the server: checking the view's state on every run, and building the file.

    python -m benchmarks.notebooks [--repeats 21] [--seed 0]

Every figure is CPU time of this process's thread (`time.thread_time`): the server's cost, not the wall clock of a
shared machine. "first" is the first notebook a fresh interpreter builds once nbformat is imported (as in the
server, where `ui.take_home` imports it in the background), "cold" the same with that import; "build" the median
of later builds at random settings of each page; "check" the median of `notebooks.settings_of`, which every run
of a page pays. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.timing import median_ms, python_loop_s

SENTENCE = "the cat sat on the mat because it was tired and the dog ran off home".split()


def random_state(page: str, rng: random.Random) -> dict[str, Any]:
    """A view of `page` at random control positions (the pages' own ranges)."""
    seed = rng.randrange(100)
    if page == "worked_example":
        t, d = rng.randint(1, 8), rng.randint(1, 8)
        view = {"weights": "random", "seed": seed, "tokens": rng.sample(SENTENCE, t),
                "X": [[rng.uniform(-3, 3) for _ in range(d)] for _ in range(t)],
                "reveal": rng.choice(["X", "Q, K, V", "raw scores", "scaled scores", "softmax", "output"])}
        if rng.random() < .5:  # a preset's matrices, written as data
            view |= {"weights": "designed", **{w: [[rng.uniform(-3, 3) for _ in range(d)] for _ in range(d)]
                                               for w in ("W_q", "W_k", "W_v")}}
        return view
    if page == "soft_lookup":
        return {"query": rng.choice(["sweet", "sour", "sweet and sour", "very sweet"]),
                "temp": rng.choice([0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0])}
    if page == "scaled_attention":
        return {"seed": seed, "seq_len": rng.randint(2, 32), "d_k": 2 ** rng.randint(0, 10),
                "scaled": rng.random() < .5}
    if page == "multi_head":
        d_model = rng.choice([4, 6, 8, 12, 16, 24, 32, 48, 64])
        heads = [h for h in range(1, d_model + 1) if d_model % h == 0]
        return {"seed": seed, "d_model": d_model, "heads": rng.choice(heads), "seq_len": rng.randint(2, 16)}
    if page == "permutation":
        t = rng.randint(1, 16)
        return {"text": " ".join(rng.choices(SENTENCE, k=t)), "seed": seed, "perm": rng.sample(range(t), t),
                "pe": rng.random() < .5}
    if page == "positional_encoding":
        d_model = rng.randint(1, 512)
        return {"positions": rng.randint(1, 512), "d_model": d_model,
                "dims": rng.sample(range(d_model), min(d_model, rng.randint(0, 8)))}
    if page == "masked_attention":
        t = rng.randint(1, 12)
        return {"seed": seed, "seq_len": t, "causal": rng.random() < .5, "step": rng.randint(1, t)}
    if page == "cross_attention":
        return {"src": " ".join(rng.choices(SENTENCE, k=rng.randint(1, 12))),
                "tgt": " ".join(rng.choices(SENTENCE, k=rng.randint(1, 12))), "seed": seed,
                "d_model": rng.choice([4, 8, 16, 32, 64])}
    if page == "exercise":
        return {"seed": 0}
    if page == "attention_cost":
        return {"max_len": rng.choice([256, 512, 1024, 2048, 4096]), "d_k": rng.choice([16, 32, 64, 128]),
                "arch": rng.choice(["all-MiniLM-L6-v2 (6 layers × 12 heads)", "BERT-base (12 layers × 12 heads)",
                                    "Llama-2-7B (32 layers × 32 heads)", "Llama-3-70B (80 layers × 64 heads)"])}
    if page == "pretrained":
        return {"text": " ".join(rng.choices(SENTENCE, k=rng.randint(1, 30))), "layer": rng.randint(1, 6),
                "head": rng.randint(1, 12)}
    if page == "transformer_block":
        d_model = rng.choice([4, 8, 12, 16, 24, 32])
        heads = [h for h in range(1, d_model + 1) if d_model % h == 0]
        return {"seed": seed, "d_model": d_model, "heads": rng.choice(heads),
                "d_ff": d_model * rng.choice([1, 2, 4, 8]), "act": rng.choice(["relu", "gelu"]),
                "ln": rng.choice(["post", "pre"]), "layers": rng.randint(1, 24), "residual": rng.random() < .5,
                "norm": rng.random() < .5, "perm": rng.sample(range(3), 3)}
    if page == "training":
        seq_len, vocab, n_heads = rng.randint(3, 12), rng.randint(2, 10), rng.choice([1, 2, 4, 8])
        steps = rng.choice([50, 100, 200, 300, 400, 600, 800, 1000, 1500, 2000])
        return {"task": rng.choice(["reverse", "copy", "sort", "first"]),
                "pos": rng.choice(["sinusoidal", "learned", "none"]), "seq_len": seq_len, "vocab": vocab,
                "d_model": rng.choice([16, 32, 64]), "n_heads": n_heads, "n_layers": rng.randint(1, 2), "steps": steps,
                "lr": rng.choice([3e-4, 1e-3, 3e-3, 1e-2, 3e-2]), "seed": seed, "batch": 64, "n_eval": 256,
                "n_checkpoints": 24, "checkpoint": steps, "digits": [rng.randrange(vocab) for _ in range(seq_len)]}
    if page == "decoder":
        return {"n_layers": rng.randint(1, 2), "n_heads": rng.choice([1, 2, 4]),
                "steps": rng.choice([100, 200, 300, 500, 800, 1200]), "seed": seed, "d_model": 32, "lr": 1e-2,
                "batch": 32, "held_out_share": 0.2, "n_checkpoints": 16,
                "prompt": rng.choice([["the", "cat"], ["the", "dogs"], ["the", "small", "bird", "sat"]]),
                "temperature": rng.choice([0.0, 0.5, 1.0, 2.0]), "top_k": rng.randint(0, 10),
                "top_p": rng.choice([0.5, 0.9, 1.0]), "draw_seed": rng.randrange(100), "n_words": rng.randint(0, 5)}
    raise KeyError(page)


def cpu_s(call: Callable[[], Any]) -> float:
    t = time.thread_time()
    call()
    return time.thread_time() - t


def first_build_s(page: str, imported: bool) -> float:
    """CPU seconds of the first notebook built by a fresh interpreter: with nbformat's import, or after it (as in
    the server, where `ui.take_home` imports it in the background)."""
    code = (f"import random, time{', nbformat.v4' if imported else ''}; from benchmarks.notebooks import random_state; "
            "from notebooks import notebook_text, settings_of; "
            f"s = settings_of({page!r}, random_state({page!r}, random.Random(0))); "
            f"t = time.thread_time(); notebook_text({page!r}, s, 'http://localhost:8501/{page}'); "
            "print(time.thread_time() - t)")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from notebooks import PAGES, notebook_text, settings_of

    rng = random.Random(args.seed)
    figures: dict[str, Any] = {"python_loop_s": python_loop_s(), "pages": {}}
    notebook_text(PAGES[0], settings_of(PAGES[0], random_state(PAGES[0], rng)))  # nbformat imported once
    builds: dict[str, list[float]] = {p: [] for p in PAGES}
    checks: dict[str, list[float]] = {p: [] for p in PAGES}
    for _ in range(args.repeats):
        for page in PAGES:  # the pages alternate, each at new random settings
            state = random_state(page, rng)
            checks[page].append(cpu_s(lambda: settings_of(page, state)))  # noqa: B023
            settings = settings_of(page, state)
            builds[page].append(cpu_s(lambda: notebook_text(page, settings, f"http://localhost:8501/{page}")))  # noqa: B023
    for page in PAGES:
        figures["pages"][page] = {"cold_ms": round(first_build_s(page, imported=False) * 1000, 1),
                                  "first_ms": round(first_build_s(page, imported=True) * 1000, 1),
                                  "build_ms": median_ms(builds[page]),
                                  "build_max_ms": round(max(builds[page]) * 1000, 1),
                                  "check_us": round(statistics.median(checks[page]) * 1e6, 1)}
    print(f"{'page':22} {'cold ms':>8} {'first ms':>9} {'build ms':>9} {'max ms':>7} {'check µs':>9}")
    for page, f in figures["pages"].items():
        print(f"{page:22} {f['cold_ms']:8} {f['first_ms']:9} {f['build_ms']:9} {f['build_max_ms']:7} {f['check_us']:9}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
