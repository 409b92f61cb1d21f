"""training (tasks, data, model, optimiser, training loop) and ui.charts.training, without Streamlit.

Training runs here are very short (tens of steps, tiny models): they check the mechanics
(loss falls, determinism, resumption, snapshot shapes), never the wall time.
"""

import concurrent.futures
import dataclasses
import sys

import numpy as np
import pytest
import torch
from torch import nn

from core.multihead import multi_head_attention
from core.positional import positional_encoding
from tests.helpers.fresh_process import fresh_python
from training.config import TASKS, TrainConfig
from training.model import MultiHeadSelfAttention, build_model, parameter_count
from training.optimiser import Adam
from training.tasks import answer_attention, held_out_set, make_targets, parse_digits, sequence_codes, training_batch
from training.trainer import Trainer, checkpoint_schedule, deterministic_torch, predict, train
from ui.charts.palette import SEQUENTIAL_SCHEME
from ui.charts.training import attention_grid, curves_frame, position_labels, probabilities_map, training_curves

#: A configuration small enough to train in well under a second on an idle machine.
TINY = TrainConfig(seq_len=5, vocab=5, d_model=16, n_heads=2, steps=30, n_eval=64, n_checkpoints=5)


@pytest.fixture(scope="module")
def tiny_run():
    return train(TINY)


# ---------------------------------------------------------------------------------------------- tasks


@pytest.mark.parametrize(("task", "expected"), [
    ("reverse", [[1, 2, 1, 3], [0, 9, 8, 7]]),
    ("copy", [[3, 1, 2, 1], [7, 8, 9, 0]]),
    ("sort", [[1, 1, 2, 3], [0, 7, 8, 9]]),
    ("first", [[3, 3, 3, 3], [7, 7, 7, 7]]),
])
def test_each_task_produces_the_right_answer(task, expected):
    x = torch.tensor([[3, 1, 2, 1], [7, 8, 9, 0]])
    assert make_targets(x, task).tolist() == expected
    assert x.tolist() == [[3, 1, 2, 1], [7, 8, 9, 0]]  # the input is not modified


@pytest.mark.parametrize("task", sorted(TASKS))
def test_targets_on_random_data_match_a_plain_python_definition(task):
    x = torch.randint(0, 10, (50, 7), generator=torch.Generator().manual_seed(1))
    y = make_targets(x, task)
    for row, out in zip(x.tolist(), y.tolist(), strict=True):
        want = {"reverse": row[::-1], "copy": row, "sort": sorted(row), "first": [row[0]] * len(row)}[task]
        assert out == want


def test_unknown_task_raises():
    with pytest.raises(ValueError, match="task must be one of"):
        make_targets(torch.zeros(1, 3, dtype=torch.int64), "shuffle")


# ----------------------------------------------------------------------------------------------- data


def test_sequence_codes_identify_rows():
    x = torch.tensor([[1, 2, 3], [3, 2, 1], [1, 2, 3], [0, 0, 9]])
    codes = sequence_codes(x, 10)
    assert codes.tolist() == [123, 321, 123, 9]


def test_held_out_set_is_distinct_in_range_and_seeded():
    x = held_out_set(TINY)
    assert x.shape == (64, 5) and x.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < TINY.vocab
    assert len(set(map(tuple, x.tolist()))) == 64  # distinct
    assert torch.equal(x, held_out_set(TINY))  # same seed, same set
    assert not torch.equal(x, held_out_set(TrainConfig(**{**TINY.__dict__, "seed": 1})))


def test_tiny_space_holds_out_a_quarter_and_training_never_sees_it():
    config = TrainConfig(seq_len=3, vocab=2, batch=32, n_eval=512)  # only 2**3 = 8 possible sequences
    x_eval = held_out_set(config)
    assert x_eval.shape == (2, 3) and len(set(map(tuple, x_eval.tolist()))) == 2
    codes = sequence_codes(x_eval, 2)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        batch = training_batch(config, g, codes)
        assert batch.shape == (32, 3)
        assert not torch.isin(sequence_codes(batch, 2), codes).any()


def test_parse_digits_accepts_spaces_commas_or_nothing():
    assert parse_digits("3 1 4 1", 10, 8) == [3, 1, 4, 1]
    assert parse_digits("3,1,4,1", 10, 8) == [3, 1, 4, 1]
    assert parse_digits(" 3141 ", 10, 8) == [3, 1, 4, 1]
    assert parse_digits("7", 10, 8) == [7]


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("3 1 x", "'x' is not in the vocabulary"),
    ("3 7 9", "'7', '9' are not in the vocabulary: the model knows the digits 0 to 4"),
    ("-1 2", "not in the vocabulary"),
    ("123456789", "9 digits is more than the 8 positions"),
])
def test_parse_digits_explains_bad_input(text, message):
    with pytest.raises(ValueError, match=message):
        parse_digits(text, 5 if "0 to 4" in message else 10, 8)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"task": "shuffle"}, "task must be one of"),
    ({"pos": "rotary"}, "pos must be one of"),
    ({"d_model": 30, "n_heads": 4}, "not divisible by n_heads=4"),
    ({"seq_len": 1}, "at least 2"),
    ({"vocab": 10, "seq_len": 40}, "too many sequences"),
    ({"lr": 0.0}, "lr must be a positive number"),
    ({"steps": 0}, "steps must be a positive integer"),
    ({"seed": -1}, "seed must be a non-negative integer"),
])
def test_bad_configs_raise_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)


# ---------------------------------------------------------------------------------------------- model


def test_attention_module_is_core_multi_head_attention():
    """The PyTorch module computes exactly `core.multi_head_attention` (NumPy, float64), weights included."""
    torch.manual_seed(3)
    attn = MultiHeadSelfAttention(d_model=8, n_heads=2).double()
    x = torch.randn(3, 5, 8, dtype=torch.float64)  # (B, T, d_model)
    out, weights = attn(x)
    # nn.Linear computes x @ W.T, so core's row-vector matrices are the transposed weights.
    w = [m.weight.detach().numpy().T for m in (attn.W_q, attn.W_k, attn.W_v, attn.W_o)]
    ref_out, ref_weights = multi_head_attention(x.numpy(), *w, n_heads=2)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), ref_weights, atol=1e-12)
    assert weights.shape == (3, 2, 5, 5)  # (B, H, T, T)


def test_attention_module_matches_torch_sdpa():
    torch.manual_seed(4)
    attn = MultiHeadSelfAttention(d_model=12, n_heads=3)
    x = torch.randn(2, 6, 12)
    out, _ = attn(x)
    q, k, v = (m(x).view(2, 6, 3, 4).transpose(1, 2) for m in (attn.W_q, attn.W_k, attn.W_v))  # (B, H, T, d_k)
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (B, H, T, d_k)
    ref = attn.W_o(heads.transpose(1, 2).reshape(2, 6, 12))
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("n_layers", [1, 2])
def test_model_shapes_and_attention_rows(n_layers):
    config = TrainConfig(seq_len=6, vocab=7, d_model=16, n_heads=4, n_layers=n_layers)
    model = build_model(config)
    logits, maps = model(torch.randint(0, 7, (3, 6)))
    assert logits.shape == (3, 6, 7)  # (B, T, vocab)
    assert maps.shape == (3, n_layers, 4, 6, 6)  # (B, L, H, T, T)
    torch.testing.assert_close(maps.sum(-1), torch.ones(3, n_layers, 4, 6))


def test_positional_encodings():
    sinusoidal = build_model(TrainConfig(seq_len=6, d_model=16, pos="sinusoidal"))
    np.testing.assert_allclose(sinusoidal.P.numpy(), positional_encoding(6, 16), atol=1e-7)
    assert not any(p is sinusoidal.P for p in sinusoidal.parameters())  # fixed, not learned
    learned = build_model(TrainConfig(seq_len=6, d_model=16, pos="learned"))
    assert any(p is learned.P for p in learned.parameters()) and learned.P.shape == (6, 16)
    none = build_model(TrainConfig(seq_len=6, d_model=16, pos="none"))
    assert torch.count_nonzero(none.P) == 0
    assert parameter_count(learned) == parameter_count(sinusoidal) + 6 * 16


def test_without_positions_the_model_cannot_tell_order():
    """pos="none": permuting the input just permutes the outputs, so reverse is out of reach."""
    x = torch.tensor([[3, 1, 4, 1, 5, 9]])
    perm = torch.tensor([5, 2, 0, 1, 4, 3])
    for pos, equivariant in (("none", True), ("sinusoidal", False)):
        model = build_model(TrainConfig(seq_len=6, d_model=16, pos=pos))
        with torch.no_grad():
            out, _ = model(x)
            out_perm, _ = model(x[:, perm])
        assert torch.allclose(out[:, perm], out_perm, atol=1e-5) == equivariant


def test_build_model_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = build_model(TINY), build_model(TINY)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    c = build_model(TrainConfig(**{**TINY.__dict__, "seed": 5}))
    assert not torch.equal(a.blocks[0].attn.W_q.weight, c.blocks[0].attn.W_q.weight)


def test_models_built_in_many_threads_at_once_each_get_their_own_seed():
    """Sessions build models in their own threads; a thread switch between one build's seeding and its drawing
    must not hand it another seed's weights (or another build's leftovers of the generator)."""
    configs = [dataclasses.replace(TINY, seed=seed) for seed in range(4)]
    expected = {c.seed: torch.cat([p.detach().flatten() for p in build_model(c).parameters()]) for c in configs}

    def weights(config: TrainConfig) -> tuple[int, torch.Tensor]:
        return config.seed, torch.cat([p.detach().flatten() for p in build_model(config).parameters()])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as Python can, so an unguarded build is interleaved
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            built = list(pool.map(weights, configs * 8))
    finally:
        sys.setswitchinterval(interval)
    assert all(torch.equal(w, expected[seed]) for seed, w in built)


def test_the_architecture_is_what_shapes_the_model():
    base = TrainConfig(seq_len=6, vocab=7, d_model=16, n_heads=4)
    same_shape = dataclasses.replace(base, seed=3, lr=1e-2, steps=50, task="sort")
    assert same_shape.architecture == base.architecture
    assert parameter_count(build_model(same_shape)) == parameter_count(build_model(base))
    for change in ({"d_model": 32}, {"n_layers": 2}, {"pos": "learned"}, {"vocab": 9}):
        other = dataclasses.replace(base, **change)
        assert other.architecture != base.architecture
        assert parameter_count(build_model(other)) != parameter_count(build_model(base))


# ------------------------------------------------------------------------------------------- training


def test_loss_falls_and_accuracy_rises(tiny_run):
    r = tiny_run
    assert r.complete and r.steps_done == 30
    assert np.mean(r.train_loss[-5:]) < np.mean(r.train_loss[:5]) - 0.1
    assert r.eval_loss[-1] < r.eval_loss[0]
    assert r.eval_accuracy[-1] > r.eval_accuracy[0]


def test_curves_and_snapshots_have_the_right_shapes(tiny_run):
    r, c = tiny_run, TINY
    assert r.checkpoint_steps == checkpoint_schedule(c) and r.checkpoint_steps[0] == 0 and r.checkpoint_steps[-1] == 30
    assert len(r.attention) == len(r.states) == len(r.checkpoint_steps)
    for maps in r.attention:
        assert maps.shape == (c.n_layers, c.n_heads, c.seq_len, c.seq_len)
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert r.checkpoint_steps == [0, 1, 5, 11, 19, 30]  # round(30 * (c / 5)^2): denser early on
    assert len(r.eval_loss) == len(r.eval_accuracy) == len(r.eval_sequence_accuracy) == len(r.checkpoint_steps)
    assert all(0 <= a <= 1 for a in r.eval_accuracy + r.eval_sequence_accuracy)
    assert r.probe.shape == (c.seq_len,) and torch.equal(torch.as_tensor(r.probe), held_out_set(c)[0])


def test_snapshots_are_the_models_attention_at_that_step(tiny_run):
    r = tiny_run
    for c in (0, len(r.states) // 2, -1):
        _, maps = r.model_at(c)(torch.as_tensor(r.probe)[None])
        np.testing.assert_allclose(maps[0].detach().numpy(), r.attention[c], atol=1e-6)
    assert r.model_at(-1) is r.model_at(len(r.states) - 1)  # built once
    assert not np.allclose(r.attention[0], r.attention[-1])  # training changed the attention


def test_same_seed_same_run_different_seed_different_run(tiny_run):
    again = train(TINY)
    assert again.train_loss == tiny_run.train_loss
    assert again.eval_accuracy == tiny_run.eval_accuracy
    for a, b in zip(again.attention, tiny_run.attention, strict=True):
        np.testing.assert_array_equal(a, b)
    other = train(TrainConfig(**{**TINY.__dict__, "seed": 1}))
    assert other.train_loss != tiny_run.train_loss


def test_training_in_chunks_gives_the_same_run(tiny_run):
    trainer = Trainer(TINY)
    trainer.run(on_step=lambda p: p.step == 7)
    assert trainer.result.steps_done == 7 and not trainer.result.complete
    trainer.run(on_step=lambda p: p.step == 19)
    trainer.run(max_seconds=0.0)  # one step, then the time budget is spent
    assert trainer.result.steps_done == 20
    r = trainer.run()
    assert r.complete
    assert r.train_loss == tiny_run.train_loss
    assert r.checkpoint_steps == tiny_run.checkpoint_steps and r.eval_loss == tiny_run.eval_loss
    for a, b in zip(r.attention, tiny_run.attention, strict=True):
        np.testing.assert_array_equal(a, b)


def test_on_step_reports_progress_and_can_stop():
    seen = []
    r = train(TINY, on_step=lambda p: seen.append(p) or p.step >= 12)
    assert [p.step for p in seen] == list(range(1, 13)) and r.steps_done == 12
    assert all(p.steps == 30 for p in seen)
    assert seen[-1].loss == r.train_loss[-1] and seen[-1].eval_accuracy == r.eval_accuracy[-1]
    assert all(b.elapsed_s >= a.elapsed_s for a, b in zip(seen, seen[1:], strict=False))


def test_adam_matches_torch_optim_step_for_step():
    torch.manual_seed(0)
    ours, theirs = nn.Linear(5, 3), nn.Linear(5, 3)
    theirs.load_state_dict(ours.state_dict())
    opt_ours, opt_theirs = Adam(ours.parameters(), lr=3e-2), torch.optim.Adam(theirs.parameters(), lr=3e-2)
    x, y = torch.randn(16, 5), torch.randn(16, 3)
    for _ in range(25):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert not torch.equal(ours.weight, nn.Linear(5, 3).weight)  # it did move


def test_training_never_imports_torch_dynamo():
    """torch.optim's first optimiser imports torch._dynamo (seconds, ~70 MB); our Adam must not."""
    script = ("import sys\nfrom training.config import TrainConfig\nfrom training.trainer import train\n"
              "train(TrainConfig(steps=3))\nprint('torch._dynamo' in sys.modules, 'sympy' in sys.modules)\n")
    assert fresh_python(script).split() == ["False", "False"]


def test_training_restores_torch_settings():
    threads, mode = torch.get_num_threads(), torch.get_deterministic_debug_mode()
    rng = torch.get_rng_state()
    with deterministic_torch(num_threads=1):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
    train(TrainConfig(**{**TINY.__dict__, "steps": 3}))
    assert torch.get_num_threads() == threads and torch.get_deterministic_debug_mode() == mode
    assert torch.equal(torch.get_rng_state(), rng)


def test_windowed_train_loss_averages_each_interval(tiny_run):
    steps, means = tiny_run.windowed_train_loss()
    assert steps.tolist() == [s for s in tiny_run.checkpoint_steps if s > 0]
    losses = np.asarray(tiny_run.train_loss)
    starts = [0, *steps[:-1]]
    np.testing.assert_allclose(means, [losses[a:b].mean() for a, b in zip(starts, steps, strict=True)])


def test_steps_to_accuracy(tiny_run):
    r = tiny_run
    assert r.steps_to_accuracy(0.0) == 0
    assert r.steps_to_accuracy(1.01) is None
    first = r.steps_to_accuracy(r.eval_accuracy[-1])
    assert r.eval_accuracy[r.checkpoint_steps.index(first)] >= r.eval_accuracy[-1]


def test_reverse_needs_positions():
    """A slightly longer run: with positions reverse is learned, without them it is not."""
    base = dict(seq_len=5, vocab=5, d_model=32, steps=150, n_eval=128, n_checkpoints=3)
    learned = train(TrainConfig(**base))
    blind = train(TrainConfig(**base, pos="none"))
    assert learned.eval_accuracy[-1] > 0.9
    assert blind.eval_accuracy[-1] < 0.6
    x, y = learned.probe, make_targets(torch.as_tensor(learned.probe)[None], "reverse")[0].numpy()
    assert answer_attention(learned.attention[-1], x, y).max() > 0.6  # some head found the anti-diagonal


# ----------------------------------------------------------------------------------- predict, analysis


def test_predict(tiny_run):
    model = tiny_run.model_at(-1)
    pred, probs, maps = predict(model, [1, 2, 3, 4, 0])
    with torch.no_grad():
        logits, ref_maps = model(torch.tensor([[1, 2, 3, 4, 0]]))
    assert pred.tolist() == logits[0].argmax(-1).tolist()
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert probs.shape == (5, 5) and maps.shape == (1, 2, 5, 5)
    np.testing.assert_allclose(maps, ref_maps[0].numpy(), atol=1e-7)
    assert predict(model, [1, 2])[2].shape == (1, 2, 2, 2)  # shorter sequences use the first positions
    with pytest.raises(ValueError, match="0..4"):
        predict(model, [1, 5])
    with pytest.raises(ValueError, match="1 to 5 tokens"):
        predict(model, [1] * 6)


def test_answer_attention():
    x = np.array([4, 2, 7, 1])
    y = x[::-1]
    anti = np.eye(4)[::-1][None, None]  # (1, 1, T, T): query i looks at key T-1-i
    np.testing.assert_allclose(answer_attention(anti, x, y), [[1.0]])
    np.testing.assert_allclose(answer_attention(np.eye(4)[None, None], x, y), [[0.0]])
    np.testing.assert_allclose(answer_attention(np.full((2, 3, 4, 4), 0.25), x, y), np.full((2, 3), 0.25))
    repeated = np.array([5, 5, 5, 5])  # every key holds every answer
    np.testing.assert_allclose(answer_attention(np.full((1, 1, 4, 4), 0.25), repeated, repeated), [[1.0]])
    with pytest.raises(ValueError, match="maps"):
        answer_attention(np.ones((1, 1, 3, 3)), x, y)


# --------------------------------------------------------------------------------------------- charts


def test_curves_frame_and_training_curves():
    loss = curves_frame([0, 10, 20], {"held-out": [2.3, 1.0, 0.5], "training": [2.2, 1.1, 0.4]})
    assert list(loss.columns) == ["step", "curve", "value"] and len(loss) == 6
    acc = curves_frame([0, 10, 20], {"per token": [0.1, 0.5, 0.9]})
    spec = training_curves(loss, acc, marker_step=10, chance=0.1).to_dict()
    loss_panel, acc_panel = spec["hconcat"]
    assert loss_panel["title"] == "Loss (cross-entropy)" and acc_panel["title"] == "Accuracy on held-out sequences"
    assert loss_panel["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert acc_panel["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0.0, 1.0]
    assert acc_panel["layer"][0]["encoding"]["x"]["title"] == "training step"
    assert {t["field"] for t in acc_panel["layer"][0]["encoding"]["tooltip"]} == {"curve", "step", "value"}
    rules = [layer for layer in acc_panel["layer"] if layer["mark"]["type"] == "rule"]
    assert len(rules) == 2  # chance level and the checkpoint shown
    datasets = spec["datasets"]
    assert [{"step": 10}] in datasets.values() and [{"level": 0.1, "label": "chance: 0.100"}] in datasets.values()
    with pytest.raises(ValueError, match="has"):
        curves_frame([0, 1], {"x": [1.0]})


def grid_maps(spec: dict) -> dict[str, np.ndarray]:
    """The matrices of an `attention_grid` spec, keyed by panel title."""
    rows = spec["datasets"][spec["data"]["name"]]
    out = {}
    for panel in spec["facet"]["sort"]:
        cells = sorted((d["q"], d["k"], d["value"]) for d in rows if d["panel"] == panel)
        t = int(round(len(cells) ** 0.5))
        out[panel] = np.array([v for _, _, v in cells]).reshape(t, t)
    return out


def test_attention_grid_draws_every_layer_and_head():
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(3), size=(2, 5, 3))  # (L=2, H=5, T=3, T=3)
    spec = attention_grid(maps, [7, 7, 2], per_row=4).to_dict()
    assert spec["columns"] == 4  # wraps after 4 heads
    assert spec["facet"]["sort"] == [f"layer {li} · head {h}" for li in (1, 2) for h in range(1, 6)]
    found = grid_maps(spec)
    for li in range(2):
        for h in range(5):
            np.testing.assert_allclose(found[f"layer {li + 1} · head {h + 1}"], maps[li, h])
    rows = spec["datasets"][spec["data"]["name"]]
    assert [d["row"] for d in rows[:9:3]] == ["0:7", "1:7", "2:2"]  # labels stay unique for repeated tokens
    enc = spec["spec"]["encoding"]
    assert enc["x"]["sort"] == enc["y"]["sort"] == ["0:7", "1:7", "2:2"]
    assert enc["x"]["title"] == "key (position:token)" and enc["y"]["title"] == "query (position:token)"
    assert {t["field"] for t in enc["tooltip"]} == {"panel", "row", "col", "value"}
    color = spec["spec"]["layer"][0]["encoding"]["color"]["scale"]
    assert color["scheme"] == SEQUENTIAL_SCHEME and color["domain"] == [0.0, 1.0]
    assert attention_grid(maps[:, :2], [7, 7, 2]).to_dict()["columns"] == 2  # one row per layer
    with pytest.raises(ValueError, match="T = 2 tokens"):
        attention_grid(maps, [1, 2])


def test_attention_grid_prints_values_only_in_big_cells():
    maps = np.full((1, 1, 4, 4), 0.25)
    big = attention_grid(maps, [1, 2, 3, 4], cell_size=30).to_dict()["spec"]
    small = attention_grid(maps, [1, 2, 3, 4], cell_size=16).to_dict()["spec"]
    assert [lay["mark"]["type"] for lay in big["layer"]] == ["rect", "text"]
    assert [lay["mark"]["type"] for lay in small["layer"]] == ["rect"]
    assert big["width"] == {"step": 30}


def test_probabilities_map_and_labels():
    probs = np.full((3, 4), 0.25)
    spec = probabilities_map(probs, [3, 0, 3]).to_dict()
    frame = next(iter(spec["datasets"].values()))
    assert sorted({d["col"] for d in frame}) == ["0", "1", "2", "3"]
    assert position_labels([3, 0, 3]) == ["0:3", "1:0", "2:3"]
    with pytest.raises(ValueError, match="T = 2"):
        probabilities_map(probs, [1, 2])


@pytest.mark.parametrize(("task", "expected"), [("reverse", [6, 2, 9, 3]), ("copy", [3, 9, 2, 6]),
                                                ("sort", [2, 3, 6, 9]), ("first", [3, 3, 3, 3])])
def test_target_of_one_sequence(task, expected):
    from training.tasks import target_of

    assert target_of([3, 9, 2, 6], task).tolist() == expected
