"""The training page's notebook, downloaded at real links (trained on the page, and untrained) and run on one thread:
it trains the page's run again and reaches its losses at every step, its held-out scores at every checkpoint, and
the attention and answers the page shows at the chosen checkpoint."""

from __future__ import annotations

import pytest

from notebooks import settings_of
from notebooks.values import NotWritableError
from tests.helpers.notebooks import assert_close, page_and_notebook, run_notebook
from training.config import TrainConfig
from training.tasks import parse_digits
from training.trainer import predict, train

PAGE = "app_pages/training.py"
RUNS = "_training_runs"
#: The loss's tolerance: the notebook's run against the page's.
LOSS_ATOL = 0.0
CURVES = ["train_loss", "eval_loss", "eval_accuracy", "eval_sequence_accuracy"]
LINKS = [
    ({"steps": "50", "seq_len": "4", "vocab": "4", "d_model": "16"}, ("train",)),
    ({"task": "sort", "pos": "learned", "seq_len": "5", "vocab": "3", "d_model": "16", "heads": "4", "layers": "2",
      "steps": "50", "lr": "0.01", "seed": "7", "ckpt": "12", "digits": "2 0 1 1"}, ("train",)),
    ({"task": "first", "pos": "none", "seq_len": "3", "vocab": "5", "d_model": "16", "heads": "1", "steps": "50",
      "seed": "3"}, ()),
]


def config_of(query: dict[str, str]) -> TrainConfig:
    ints = {"seq_len": 8, "vocab": 10, "d_model": 32, "heads": 2, "layers": 1, "steps": 400, "seed": 0}
    v = {k: int(query.get(k, d)) for k, d in ints.items()}
    return TrainConfig(task=query.get("task", "reverse"), pos=query.get("pos", "sinusoidal"), seq_len=v["seq_len"],
                       vocab=v["vocab"], d_model=v["d_model"], n_heads=v["heads"], n_layers=v["layers"],
                       steps=v["steps"], lr=float(query.get("lr", 3e-3)), seed=v["seed"])


@pytest.mark.parametrize(("link", "press"), LINKS, ids=["short run, trained", "sort, learned positions, 2 layers, "
                                                        "checkpoint 12, own digits", "first, no positions, untrained"])
def test_the_notebook_trains_the_page_s_run_again(kernel, link, press):
    at, name, text = page_and_notebook(PAGE, press=press, **link)
    assert name == "training.ipynb"
    config = config_of(link)
    result = at.session_state[RUNS][config].result if press else train(config)
    found = run_notebook(text, kernel, [*CURVES, "checkpoint_steps", "maps", "probs", "prediction"])
    assert found["checkpoint_steps"] == result.checkpoint_steps and len(found["train_loss"]) == config.steps
    assert_close(found, {n: getattr(result, n) for n in CURVES}, atol=LOSS_ATOL)
    ckpt = int(link.get("ckpt", config.steps))
    c = result.checkpoint_steps.index(ckpt)
    digits = (parse_digits(link["digits"], config.vocab, config.seq_len) if "digits" in link
              else [int(d) for d in result.probe])
    prediction, probs, _ = predict(result.model_at(c), digits)
    assert_close(found, {"maps": result.attention[c], "probs": probs, "prediction": prediction})


@pytest.mark.parametrize("change", [{"task": "shuffle"}, {"n_heads": 3}, {"digits": [0, 7]}, {"digits": []},
                                    {"seq_len": 40}, {"lr": float("nan")}])
def test_a_run_the_page_cannot_train_is_not_written(change):
    view = {"task": "reverse", "pos": "sinusoidal", "seq_len": 4, "vocab": 4, "d_model": 16, "n_heads": 2,
            "n_layers": 1, "steps": 50, "lr": 3e-3, "seed": 0, "batch": 64, "n_eval": 256, "n_checkpoints": 24,
            "checkpoint": 50, "digits": [1, 2]}
    assert settings_of("training", view)["digits"] == [1, 2]
    with pytest.raises(NotWritableError):
        settings_of("training", {**view, **change})
