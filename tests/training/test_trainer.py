"""training.trainer and training.optimiser: the training loop, its snapshots, resumption and prediction.

Training runs here are very short (tens of steps, tiny models): they check the mechanics (loss falls, determinism,
resumption, snapshot shapes), never the wall time.
"""

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

from tests.helpers.fresh_process import fresh_python
from tests.helpers.torch_ops import OutputShapes
from tests.training.tiny import TINY
from training.config import TrainConfig
from training.optimiser import Adam
from training.tasks import answer_attention, held_out_set, make_targets
from training.trainer import Trainer, checkpoint_schedule, deterministic_torch, evaluate, predict, train


@pytest.fixture(scope="module")
def tiny_run():
    return train(TINY)


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


def beside_torch_optim(make: Callable[[], nn.Module], loss: Callable[[nn.Module], torch.Tensor],
                       steps: int) -> tuple[nn.Module, nn.Module]:
    """Two copies of `make()`'s model after `steps` steps down `loss`, ours with `Adam`, theirs with
    ``torch.optim.Adam``; each parameter of ours is checked against theirs."""
    torch.manual_seed(0)
    ours, theirs = make(), make()
    theirs.load_state_dict(ours.state_dict())
    opt_ours, opt_theirs = Adam(ours.parameters(), lr=3e-2), torch.optim.Adam(theirs.parameters(), lr=3e-2)
    for _ in range(steps):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            loss(model).backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    return ours, theirs


def test_adam_matches_torch_optim_step_for_step():
    x, y = torch.randn(16, 5), torch.randn(16, 3)
    ours, _ = beside_torch_optim(lambda: nn.Linear(5, 3), lambda model: nn.functional.mse_loss(model(x), y), 25)
    assert not torch.equal(ours.weight, nn.Linear(5, 3).weight)  # it did move


def one_at_a_time_adam(params: list[nn.Parameter], lr: float, t: int, m: list[torch.Tensor],
                       v: list[torch.Tensor]) -> None:
    """Adam's step `t` written one parameter after another, as `Adam` did before it kept a flat vector."""
    bias1, bias2 = 1 - 0.9**t, 1 - 0.999**t
    with torch.no_grad():
        for p, m_p, v_p in zip(params, m, v, strict=True):
            if p.grad is None:
                continue
            m_p.mul_(0.9).add_(p.grad, alpha=0.1)
            v_p.mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
            p.addcdiv_(m_p, (v_p.sqrt() / bias2**0.5).add_(1e-8), value=-lr / bias1)


def two_models(n_layers: int) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    ours = nn.Sequential(*(nn.Linear(6, 6) for _ in range(n_layers)), nn.Linear(6, 2))
    theirs = nn.Sequential(*(nn.Linear(6, 6) for _ in range(n_layers)), nn.Linear(6, 2))
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


def test_adam_gives_the_very_numbers_of_a_step_taken_one_parameter_at_a_time():
    """Updating every parameter at once through one flat vector changes no bit of a run (runs stay the same runs)."""
    ours, theirs = two_models(3)
    opt = Adam(ours.parameters(), lr=3e-2)
    params = list(theirs.parameters())
    m, v = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    x, y = torch.randn(16, 6), torch.randn(16, 2)
    for t in range(1, 31):
        opt.descend(nn.functional.mse_loss(ours(x), y))
        for p in params:
            p.grad = None
        nn.functional.mse_loss(theirs(x), y).backward()
        one_at_a_time_adam(params, 3e-2, t, m, v)
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)


def test_adam_skips_a_parameter_without_a_gradient_like_torch_optim():
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    torch.manual_seed(0)
    before = nn.ModuleList([nn.Linear(4, 2), nn.Linear(4, 2)])
    ours, _ = beside_torch_optim(lambda: nn.ModuleList([nn.Linear(4, 2), nn.Linear(4, 2)]),
                                 lambda model: nn.functional.mse_loss(model[0](x), y), 10)  # the second layer unused
    assert torch.equal(ours[1].weight, before[1].weight) and not torch.equal(ours[0].weight, before[0].weight)


def test_adam_steps_every_parameter_at_once():
    """A step's arithmetic does not grow with the number of parameters: one update of a flat vector of them all
    (only the views that gather the gradients into it do)."""
    def ops_in_a_step(n_layers: int) -> int:
        model, _ = two_models(n_layers)
        opt = Adam(model.parameters(), lr=1e-2)
        model(torch.randn(4, 6)).sum().backward()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            opt.step()
        return sum(e.count for e in prof.key_averages() if e.key.startswith("aten::") and e.key != "aten::view")

    assert ops_in_a_step(8) == ops_in_a_step(1)



def test_a_training_step_and_a_held_out_score_never_make_the_attention_weights():
    """The weights ``(B, H, T, T)`` are for drawing (the probe's snapshots, a prediction): a training step, forward
    and backward, and the held-out scores take the fused attention, which never makes them."""
    trainer = Trainer(TINY)
    with OutputShapes() as seen:
        trainer.step()
        evaluate(trainer.model, trainer.x_eval, trainer.y_eval)
    assert len(seen.shapes) > 100
    assert seen.square_maps(TINY.seq_len) == []
    assert predict(trainer.model, trainer.x_eval[0].numpy())[2].shape[-2:] == (TINY.seq_len, TINY.seq_len)

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


# ------------------------------------------------------------------------------------------- predict


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
