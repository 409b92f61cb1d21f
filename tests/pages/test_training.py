"""AppTests of app_pages/training.py: renders untrained, trains a short run, keeps it, never retrains on display."""

import functools
import re

import numpy as np
import pytest
import torch

from tests.helpers.apptest import chart_specs, heatmaps, open_code, run_page
from tests.helpers.registry import Case, PageTests, Probe
from training.config import TASKS, TrainConfig
from training.model import build_model, parameter_count
from training.tasks import held_out_size, make_targets, parse_digits
from training.trainer import Trainer, predict, train
from ui.export import matrix_titles, series_tables

PAGE = "app_pages/training.py"
RUNS = "_training_runs"
#: A short run set through the URL, and the configuration the page must build from it.
SHORT = dict(steps="50", seq_len="4", vocab="4", d_model="16")
SHORT_CONFIG = TrainConfig(steps=50, seq_len=4, vocab=4, d_model=16)
TRAIN_TIMEOUT = 300  # seconds; a loaded CI machine can be slow, and the timing is not what these tests check


def attention_grids(at) -> list[dict[str, np.ndarray]]:
    """Every `attention_grid` on the page, in page order, as {"layer l · head h": matrix}."""
    grids = []
    for spec, frames in chart_specs(at):
        if spec.get("facet", {}).get("field") != "panel":
            continue
        df = frames[spec["data"]["name"]]
        grids.append({panel: g.sort_values(["q", "k"])["value"].to_numpy().reshape(int(g["q"].max()) + 1, -1)
                      for panel, g in df.groupby("panel")})
    return grids


def checkpoint_maps(at) -> dict[str, np.ndarray]:
    """The attention grid of section 2 (the first one on the page)."""
    return attention_grids(at)[0]


def curves_panels(at):
    """The loss and accuracy panels of the learning-curve chart, with their data frames."""
    for spec, frames in chart_specs(at):
        titles = [p.get("title") for p in spec.get("hconcat", [])]
        if titles == ["Loss (cross-entropy)", "Accuracy on held-out sequences"]:
            return spec["hconcat"], frames
    raise AssertionError("no learning-curve chart on the page")


def curve(at, panel: int, name: str) -> np.ndarray:
    panels, frames = curves_panels(at)
    df = frames[panels[panel]["layer"][0]["data"]["name"]]
    return df[df["curve"] == name]["value"].to_numpy()


def trained(**query):
    at = run_page(PAGE, **query)
    at.button(key="train").click().run(timeout=TRAIN_TIMEOUT)
    assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def short_run():
    return train(SHORT_CONFIG)


def test_defaults_render_without_training():
    at = run_page(PAGE)
    assert not at.exception and not at.error
    assert at.title[0].value == "Watch attention learn"
    assert "Not trained yet" in at.info[0].value
    assert at.button(key="train").label == "Train" and not at.button(key="train").disabled
    assert not at.get("vega_lite_chart") and not at.session_state[RUNS]
    n = parameter_count(build_model(TrainConfig()))
    assert any(f"{n:,} trainable numbers" in c.value for c in at.caption)
    assert at.radio(key="task").value == "reverse" and at.radio(key="pos").value == "sinusoidal"
    assert at.select_slider(key="steps").value == 400 and at.slider(key="seq_len").value == 8
    assert not at.code  # sent only when asked for
    code = " ".join(c.value for c in open_code(at).code)
    assert "class MultiHeadSelfAttention" in code and "weights = scores.softmax(dim=-1)" in code


def test_the_introduction_names_the_pages_whose_weights_are_learned():
    at = run_page(PAGE)
    text = " ".join(m.value for m in at.markdown)
    assert "Every other page uses random" not in text
    assert "the real model's and the decoder's pages show learned ones" in text


def test_slider_extremes_render_untrained():
    at = run_page(PAGE, seq_len="12", vocab="2", d_model="64", heads="8", layers="2", steps="2000", lr="0.03",
                  seed="99", task="sort", pos="learned")
    assert not at.exception and not at.error
    assert at.slider(key="seq_len").value == 12 and at.select_slider(key="lr").value == 0.03
    at = run_page(PAGE, seq_len="3", vocab="2", d_model="16", heads="1", steps="50", lr="0.0003")
    assert not at.exception and not at.error
    n = parameter_count(build_model(TrainConfig(seq_len=3, vocab=2, d_model=16, n_heads=1, steps=50, lr=3e-4)))
    assert any(f"{n:,} trainable numbers" in c.value for c in at.caption)


def test_short_training_shows_curves_maps_and_the_same_numbers_as_core(short_run):
    at = trained(**SHORT)
    r = short_run
    assert not at.error and not at.get("progress")  # the live progress bar is gone when done
    assert at.button(key="train").label == "Trained" and at.button(key="train").disabled
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Held-out accuracy, per token"] == f"{r.eval_accuracy[-1]:.1%}"
    assert metrics["Whole sequence right"] == f"{r.eval_sequence_accuracy[-1]:.1%}"
    reached = r.steps_to_accuracy(0.95)
    assert metrics["First step at ≥ 95%"] == ("not reached" if reached is None else str(reached))
    np.testing.assert_allclose(curve(at, 1, "per token"), r.eval_accuracy)
    np.testing.assert_allclose(curve(at, 0, "held-out"), r.eval_loss)
    np.testing.assert_allclose(curve(at, 0, "training batches"), r.windowed_train_loss()[1])
    ckpt = at.select_slider(key="ckpt")
    assert [int(o) for o in ckpt.options] == r.checkpoint_steps and ckpt.value == 50
    maps = checkpoint_maps(at)
    assert set(maps) == {"layer 1 · head 1", "layer 1 · head 2"}
    np.testing.assert_allclose(maps["layer 1 · head 1"], r.attention[-1][0, 0], atol=1e-6)
    np.testing.assert_allclose(maps["layer 1 · head 2"], r.attention[-1][0, 1], atol=1e-6)
    assert "predicted probability of each output digit" in heatmaps(at)

    # Display controls never retrain: the same trainer, the same steps, the same training time.
    trainer = at.session_state[RUNS][SHORT_CONFIG]
    elapsed = trainer.result.elapsed_s
    at.select_slider(key="ckpt").set_value(r.checkpoint_steps[2]).run()
    assert not at.exception
    assert at.session_state[RUNS][SHORT_CONFIG] is trainer and trainer.result.elapsed_s == elapsed
    assert trainer.result.steps_done == 50 and len(at.session_state[RUNS]) == 1
    np.testing.assert_allclose(checkpoint_maps(at)["layer 1 · head 1"], r.attention[2][0, 0], atol=1e-6)
    panels, frames = curves_panels(at)
    marker = [lay for lay in panels[1]["layer"] if lay["mark"]["type"] == "rule" and "x" in lay["encoding"]]
    assert frames[marker[0]["data"]["name"]]["step"].tolist() == [r.checkpoint_steps[2]]

    at.text_input(key="digits").set_value("3 0 1 2").run()
    assert not at.exception and trainer.result.elapsed_s == elapsed
    pred, _, attn = predict(r.model_at(2), [3, 0, 1, 2])
    answer = " ".join(map(str, make_targets(torch.tensor([[3, 0, 1, 2]]), "reverse")[0].tolist()))
    line = next(m.value for m in at.markdown if m.value.startswith("input `3 0 1 2`"))
    assert f"model `{' '.join(map(str, pred))}`" in line and f"correct answer `{answer}`" in line
    assert f"at step {r.checkpoint_steps[2]}" in line
    own = attention_grids(at)[1]  # the second grid: your input
    np.testing.assert_allclose(own["layer 1 · head 1"], attn[0, 0], atol=1e-6)
    np.testing.assert_allclose(own["layer 1 · head 2"], attn[0, 1], atol=1e-6)

    at.text_input(key="digits").set_value("3 9 1 2").run()  # 9 is outside the vocabulary 0..3
    assert not at.exception
    assert any("'9' is not in the vocabulary" in w.value for w in at.warning)
    at.text_input(key="digits").set_value("301230").run()  # too long: the first 4 are used
    assert not at.exception
    assert any("Only the first 4 of your 6 digits" in c.value for c in at.caption)
    assert any(m.value.startswith("input `3 0 1 2`") for m in at.markdown)


def test_a_stopped_run_is_kept_and_continues_exactly(short_run):
    trainer = Trainer(SHORT_CONFIG)
    trainer.run(on_step=lambda p: p.step == 20)  # what a Stop click leaves behind: a run cut between two steps
    at = run_page(PAGE, **SHORT)
    at.session_state[RUNS] = {SHORT_CONFIG: trainer}
    at.run()
    assert not at.exception
    assert any("stopped at step 20 of 50" in w.value for w in at.warning)
    assert at.button(key="train").label == "Continue training"
    assert at.metric[0].value == f"{trainer.result.eval_accuracy[-1]:.1%}"
    assert at.select_slider(key="ckpt").value == trainer.result.checkpoint_steps[-1] <= 20
    at.button(key="train").click().run(timeout=TRAIN_TIMEOUT)
    assert not at.exception and not any("stopped" in w.value for w in at.warning)
    assert trainer.result.complete and trainer.result.train_loss == short_run.train_loss


@pytest.mark.parametrize(("task", "pos", "message"), [
    ("reverse", "none", "cannot learn to reverse"),
    ("copy", "none", "Copy needs no positions"),
])
def test_without_positional_encoding_the_page_says_so(task, pos, message):
    at = trained(seq_len="3", vocab="2", d_model="16", heads="8", steps="50", task=task, pos=pos)
    config = TrainConfig(task=task, pos=pos, seq_len=3, vocab=2, d_model=16, n_heads=8, steps=50)
    r = at.session_state[RUNS][config].result
    notes = " ".join(w.value for w in at.warning) + " ".join(i.value for i in at.info)
    assert message in notes
    if task == "reverse":
        assert f"reached {r.eval_accuracy[-1]:.1%}" in notes and "guessing: 50.0%" in notes
        # said to beat guessing only when the measured accuracy does
        assert ("It beats guessing" in notes) == (r.eval_accuracy[-1] > 0.5)
        assert ("no better than guessing" in notes) == (r.eval_accuracy[-1] <= 0.5)
    assert checkpoint_maps(at)["layer 1 · head 8"].shape == (3, 3)


def test_heaviest_model_trains():
    at = trained(seq_len="12", vocab="10", d_model="64", heads="8", layers="2", steps="50", lr="0.03", task="sort",
                 pos="learned", seed="99")
    assert not at.error
    maps = checkpoint_maps(at)
    assert len(maps) == 16 and all(m.shape == (12, 12) for m in maps.values())
    assert len(attention_grids(at)) == 2 and len(attention_grids(at)[1]) == 16  # and the grid of your own input
    config = TrainConfig(task="sort", pos="learned", seq_len=12, vocab=10, d_model=64, n_heads=8, n_layers=2,
                         steps=50, lr=0.03, seed=99)
    assert at.session_state[RUNS][config].result.complete


def test_after_a_run_every_chart_can_be_read_as_tables_the_curves_values_included(short_run):
    """Nothing only in colour or on hover after training either: every chart of a finished run has its numbers
    under "Show the numbers", and the learning curves' table holds the run's own held-out loss and accuracy."""
    at = trained(**SHORT)
    sent = [{**spec, "datasets": frames} for spec, frames in chart_specs(at)]
    untabled = [spec.get("description") for spec in sent if not matrix_titles(spec) and not series_tables(spec)]
    assert sent and not untabled, f"{len(untabled)} of {len(sent)} charts have no table"
    for expander in at.expander:
        if expander.label == "Show the numbers":
            at.session_state[expander.proto.id.split("-", 2)[-1]] = True
    at.run()
    assert not at.exception
    tables = [t.value for t in at.table]
    r = short_run

    def column(name: str) -> np.ndarray:  # a series' values at its own steps (blank where only another has one)
        values = next(t[name] for t in tables if name in map(str, t.columns))
        return values[values != ""].astype(float).to_numpy()

    np.testing.assert_allclose(column("held-out"), r.eval_loss, atol=5e-5)  # tables print 4 decimals
    np.testing.assert_allclose(column("per token"), r.eval_accuracy, atol=5e-5)
    maps = [t for t in tables if list(t.index) == list(t.columns) == ["0:1", "1:3", "2:0", "3:0"]]
    assert any(np.allclose(t.to_numpy(dtype=float), r.attention[-1][0, 0], atol=5e-4) for t in maps)


def test_training_lets_the_class_s_waiting_steps_go_between_its_chunks(monkeypatch):
    """A run trains in chunks; between two, every step waiting for a turn goes first (`ui.turns.next_turn`)."""
    import ui.turns

    chunks = []
    monkeypatch.setattr(ui.turns, "next_turn", lambda: chunks.append("turn"))
    trained(**SHORT)
    assert chunks


# ------------------------------------------------------------------- what the shared tests know of this page

def training_shown(at) -> dict:
    """The untrained page's description of the configuration (its caption), parsed."""
    (text,) = [c.value for c in at.caption if c.value.startswith("**Task:")]
    example = re.search(r"e\.g\. ([\d ]+) →", text).group(1).split()
    return {"task": re.match(r"\*\*Task: (.*?)\*\*", text).group(1), "example length": len(example),
            "largest example digit": max(map(int, example)),
            "parameters": int(re.search(r"([\d,]+) trainable numbers", text).group(1).replace(",", "")),
            "d_k": int(re.search(r"d_k = (\d+)", text).group(1)),
            "held out": int(re.search(r"measured on ([\d,]+) held-out", text).group(1).replace(",", "")),
            "button": at.button(key="train").label}


def train_config(p) -> TrainConfig:
    return TrainConfig(task=p["task"], seq_len=p["seq_len"], vocab=p["vocab"], d_model=p["d_model"],
                       n_heads=p["heads"], n_layers=p["layers"], pos=p["pos"], steps=p["steps"], lr=p["lr"],
                       seed=p["seed"])


EXAMPLE_DIGITS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]  # app_pages/training.py's illustration, shown mod vocab


def training_expected(p) -> dict:
    config = train_config(p)
    return {"task": TASKS[p["task"]], "example length": p["seq_len"],
            "largest example digit": max(d % p["vocab"] for d in EXAMPLE_DIGITS[:p["seq_len"]]),
            "parameters": parameter_count(build_model(config)), "d_k": p["d_model"] // p["heads"],
            "held out": held_out_size(config), "button": "Train"}


TRAINING_DEFAULTS = dict(task="reverse", pos="sinusoidal", seq_len=8, vocab=10, d_model=32, heads=2, layers=1,
                         steps=400, lr=3e-3, seed=0)
#: A short run, trained once for this module: a link with its settings must open on its results.
SHORT_RUN = dict(steps=50, seq_len=4, d_model=16, lr=0.01, seed=7)  # and the default vocabulary, 0 … 9
SHORT_LINK = {k: str(v) for k, v in SHORT_RUN.items()}


@functools.cache
def linked_run() -> Trainer:
    trainer = Trainer(train_config({**TRAINING_DEFAULTS, **SHORT_RUN}))
    trainer.run()
    return trainer


def trained_session() -> dict:
    """Session state holding the short run, as the training page keeps its runs."""
    trainer = linked_run()
    return {RUNS: {trainer.config: trainer}}


def trained_shown(at) -> dict:
    if at.button(key="train").label != "Trained":
        return {"button": at.button(key="train").label}
    line = next(m.value for m in at.markdown if m.value.startswith("input `"))
    return {"button": "Trained", "maps at the checkpoint": checkpoint_maps(at), "your input": line.split(" · ")[0]}


def trained_expected(p) -> dict:
    trainer = linked_run()
    if train_config(p) != trainer.config:
        return {"button": "Train"}  # no run with these settings in the session
    r = trainer.result
    c = r.checkpoint_steps.index(p["ckpt"])
    maps = {f"layer 1 · head {h + 1}": r.attention[c][0, h] for h in range(p["heads"])}
    x = parse_digits(p["digits"], p["vocab"], 12)[: p["seq_len"]]
    pred, _, _ = predict(r.model_at(c), x)
    return {"button": "Trained", "maps at the checkpoint": maps,
            "your input": f"input `{' '.join(map(str, x))}` → model `{' '.join(map(str, pred))}`"}


TRAINED = Probe({**TRAINING_DEFAULTS, "ckpt": 50, "digits": "3 1 4 1 5 9 2 6"}, trained_shown, trained_expected)
TEN_THOUSAND_CHARACTERS = "w " * 5000  # 5,000 words
SHARED = PageTests(
    probe=Probe(TRAINING_DEFAULTS, training_shown, training_expected),
    # Before training, every setting shows in the description of the model; a link with a trained run's
    # settings opens on that run (so steps, lr and seed are used), at the linked checkpoint, on the linked digits.
    valid=[
        Case("training", dict(task="sort", pos="learned", seq_len="5", vocab="6", d_model="64", heads="8",
                              layers="2", present="true"),
             dict(task="sort", pos="learned", seq_len=5, vocab=6, d_model=64, heads=8, layers=2, present=True)),
        Case("training", {**SHORT_LINK, "ckpt": "20", "digits": "3 0 1 2"},
             {**SHORT_RUN, "ckpt": 20, "digits": "3 0 1 2"}, covers=("steps", "lr", "seed", "ckpt", "digits"),
             probe=TRAINED, session=trained_session, id="training-trained-run"),
    ],
    malformed=[
        Case("training", dict(task="dance", pos="rope", seq_len="2", vocab="11", d_model="48", heads="3",
                              layers="3", steps="7", lr="0.5", seed="abc", present="maybe"),
             {**TRAINING_DEFAULTS, "present": False}),
        Case("training", {**SHORT_LINK, "ckpt": "21"}, {**SHORT_RUN, "ckpt": 50}, covers=("ckpt",), probe=TRAINED,
             session=trained_session, id="training-ckpt-not-a-checkpoint"),
        Case("training", {**SHORT_LINK, "digits": TEN_THOUSAND_CHARACTERS},
             {**SHORT_RUN, "digits": TEN_THOUSAND_CHARACTERS}, uses={"digits": "3 1 4 1 5 9 2 6"},
             error="5000 words is more than the 12", covers=("digits",), probe=TRAINED, session=trained_session,
             id="training-digits-too-many"),
    ],
    presenter_text="The lesson's pages use random W_q",
)
