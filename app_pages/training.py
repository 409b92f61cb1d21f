"""Watch attention learn: train a tiny Transformer live on the CPU and scrub through its attention maps."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from training.config import POSITIONAL, TASKS, TrainConfig
from training.model import Block, MultiHeadSelfAttention, TinyTransformer, build_model, parameter_count
from training.tasks import answer_attention, held_out_size, make_targets, parse_digits, target_of
from training.trainer import Trainer, TrainingResult, predict
from ui.cache import shared_cache
from ui.chart_names import ChartName, largest_weight
from ui.charts import training as charts
from ui.display import show_chart
from ui.layout import controls_row, explain, introduction, page_fragment, show_source, whole_block_link
from ui.take_home import offer_notebook
from ui.url_state import bound_choice, bound_select_slider, bound_slider, seed_slider, tokens_input
from ui.wording.training import without_positions
from ui.work_line import LINE

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"seq_len": "12", "d_model": "64", "heads": "8", "layers": "2"}

#: session_state key of this session's runs: {TrainConfig: Trainer}, finished or stopped.
RUNS_KEY = "_training_runs"
#: session_state key of this session's name in the process's line for trainings (`ui.work_line`).
LINE_KEY = "_training_line"
MAX_RUNS = 4  # a 2-layer, d_model=64 run with its checkpoints is ~10 MB
UPDATE_EVERY_S = 0.25  # the progress bar and readout are refreshed after every chunk of this much training
REDRAW_EVERY_S = 0.75  # one of the two live charts is redrawn at most this often
LIVE_CELL = 24  # px: the live attention maps print no values, which keeps them quick to redraw in the browser
D_MODELS = [16, 32, 64]
HEADS = [1, 2, 4, 8]
STEPS = [50, 100, 200, 300, 400, 600, 800, 1000, 1500, 2000]
LRS = [3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
DEFAULT_DIGITS = "3 1 4 1 5 9 2 6"
MAX_SEQ_LEN = 12
EXAMPLE = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]  # shown mod vocab, to illustrate the task
TARGET_ACCURACY = 0.95
PATTERN = {
    "reverse": "query i should fetch key T−1−i: look for the **anti-diagonal**",
    "copy": "nothing needs fetching, each position already carries its own answer in the residual stream, "
            "so the maps may stay blurry even at 100 % accuracy",
    "sort": "position i needs the i-th smallest digit, so where a query looks depends on the digits' values "
            "as much as on their positions",
    "first": "every query should fetch key 0: look for a bright **first column**",
}


@shared_cache(64)
def n_parameters(architecture: tuple[int, int, int, int, int, str], _config: TrainConfig) -> int:
    """Trainable numbers of `_config`'s model, counted once per `architecture` (its shape, not its seed or lr)."""
    return parameter_count(build_model(_config))


def remember(runs: dict[TrainConfig, Trainer], trainer: Trainer) -> None:
    """Keep `trainer` in the session, dropping the oldest runs beyond `MAX_RUNS`."""
    runs[trainer.config] = trainer
    while len(runs) > MAX_RUNS:
        runs.pop(next(iter(runs)))


def progress_text(result: TrainingResult) -> str:
    loss = f"{result.train_loss[-1]:.3f}" if result.train_loss else "–"
    return (f"step {result.steps_done} / {result.config.steps} · batch loss {loss} · held-out accuracy "
            f"{result.eval_accuracy[-1]:.1%} · {result.elapsed_s:.1f} s")


def train_live(config: TrainConfig, runs: dict[TrainConfig, Trainer], buttons: DeltaGenerator) -> None:
    """Train in short chunks, redrawing the progress, readout and live charts between them, after waiting in the
    process's line for a slot if need be (the model is built once the slot is found).

    A click on Stop (or on any other control) makes Streamlit rerun the page; the rerun
    interrupts this loop at its next drawing call, between two chunks, so the trainer in
    session_state is always at a clean step boundary and can be continued exactly.
    """
    stop = buttons.empty()
    stop.button("Stop", key="stop", icon=":material/stop:",
                help="Stop training. The run so far is kept and shown, and can be continued later.")
    bar = st.progress(0.0, text="building the model…")
    trainer = runs.get(config)
    done = 0 if trainer is None else trainer.result.steps_done
    live = LiveView(st.empty(), st.empty(), st.empty())
    budget = UPDATE_EVERY_S
    session = st.session_state.setdefault(LINE_KEY, uuid.uuid4().hex)
    with LINE.place(("training", session, config), "training step", config.steps, done) as place:
        for _ in place.chunks(lambda standing: bar.progress(done / config.steps, text=standing.sentence())):
            if trainer is None:
                trainer = Trainer(config)
                remember(runs, trainer)
            result = trainer.run(max_seconds=budget)
            place.progress(result.steps_done)
            bar.progress(result.steps_done / result.config.steps, text=progress_text(result))
            if result.complete:
                break
            budget = live.redraw(result)
    for placeholder in (stop, bar, *live.placeholders()):
        placeholder.empty()


@dataclass
class LiveView:
    """The live charts under the progress bar: the curves and the maps, redrawn one at a time."""

    curves: DeltaGenerator
    maps: DeltaGenerator
    note: DeltaGenerator
    drawn: float = -float("inf")
    redraws: int = 0

    def placeholders(self) -> tuple[DeltaGenerator, ...]:
        return self.curves, self.maps, self.note

    def redraw(self, result: TrainingResult) -> float:
        """Redraw one chart if `REDRAW_EVERY_S` has passed; the seconds of training before the next readout."""
        if time.perf_counter() - self.drawn < REDRAW_EVERY_S:
            return UPDATE_EVERY_S
        # Charts cost more to draw than the readout, in the browser too: redraw one of the two at a time.
        self.drawn = time.perf_counter()
        if self.redraws % 2 == 0:
            with self.curves:
                show_chart(charts.learning_curves(result, result.steps_done), export=False,
                           alt=f"Loss and accuracy so far, out of {result.config.steps} training steps")
        else:
            with self.maps:
                show_chart(charts.attention_grid(result.attention[-1], result.probe,
                                                 cell_size=min(charts.map_cell_size(len(result.probe)), LIVE_CELL)),
                           export=False, alt=f"Attention maps of every layer and head, {len(result.probe)} "
                                             "positions by as many, at the latest snapshot")
            self.note.caption(f"Attention of a held-out sequence at step {result.checkpoint_steps[-1]}, "
                              "the latest snapshot.")
        self.redraws += 1
        # the next readout stays UPDATE_EVERY_S after this one: drawing time comes off the next chunk
        return max(0.05, UPDATE_EVERY_S - (time.perf_counter() - self.drawn))


introduction(
    "Watch attention learn",
    "The lesson's pages use random W_q, W_k and W_v (the real model's and the decoder's pages show learned "
    "ones, trained elsewhere or on a made-up language). Here a tiny Transformer *learns* them, on this "
    "machine's CPU, in seconds. It reads a sequence of digits and must write, at every position, one "
    "output digit: the sequence reversed, copied, sorted, or its first digit repeated. Nobody tells it "
    "where to look; gradient descent on the prediction error shapes the attention maps until each "
    "position looks where its answer is. Press **Train** and watch that happen.",
    r"\begin{gathered}"
    r"H = \operatorname{Embed}(x) + P,\qquad "
    r"H \leftarrow H + \operatorname{MultiHead}(\operatorname{LN}(H)),\qquad "
    r"H \leftarrow H + \operatorname{MLP}(\operatorname{LN}(H))\ \ (\times\,\text{layers})\\"
    r"\hat y_i = \operatorname{softmax}(h_i W_{out}),\qquad "
    r"\mathcal{L} = -\frac{1}{T}\sum_i \log \hat y_i[y_i]"
    r"\end{gathered}",
)


@page_fragment
def show_results(trainer: Trainer) -> None:
    """Curves, attention snapshots and the try-it box of a (possibly partial) run.

    A fragment nested in the page's: the checkpoint slider and the digits box rerun only this part, not the
    dozen settings above it.
    """
    result, config = trainer.result, trainer.config
    if not result.complete:
        st.warning(f"Training stopped at step {result.steps_done} of {config.steps}: everything below is the run so "
                   "far. **Continue training** picks it up exactly where it stopped.", icon=":material/pause:")
    learning_curves_section(result)
    positional_encoding_note(result, config)
    ckpt = int(bound_select_slider(
        "Checkpoint (training step)", "ckpt", result.checkpoint_steps, result.checkpoint_steps[-1],
        help="Scrub through training: the black rule on the curves and the attention maps below follow it.",
    ))
    c = result.checkpoint_steps.index(ckpt)
    show_chart(charts.learning_curves(result, ckpt),
               alt=ChartName(f"Loss and accuracy against the training step, over {config.steps} steps",
                             f"At step {ckpt}: held-out loss {result.eval_loss[c]:.2f}, accuracy "
                             f"{result.eval_accuracy[c]:.0%}."))
    attention_section(result, config, c, ckpt)
    own_digits_section(result, config, c, ckpt)


def learning_curves_section(result: TrainingResult) -> None:
    """Section 1's figures: held-out accuracy, per token and per sequence, when it was reached, and the time taken."""
    st.header("1 · Learning curves")
    reached = result.steps_to_accuracy(TARGET_ACCURACY)
    with st.container(horizontal=True):
        st.metric("Held-out accuracy, per token", f"{result.eval_accuracy[-1]:.1%}", border=True,
                  help="Share of output digits right on sequences never trained on.")
        st.metric("Whole sequence right", f"{result.eval_sequence_accuracy[-1]:.1%}", border=True)
        st.metric(f"First step at ≥ {TARGET_ACCURACY:.0%}", "not reached" if reached is None else f"{reached}",
                  border=True)
        st.metric("Training time", f"{result.elapsed_s:.1f} s", border=True, help="Wall time on this server's CPU.")


def positional_encoding_note(result: TrainingResult, config: TrainConfig) -> None:
    """What positional encoding (or its absence) does to this task: a model without it cannot learn where to look."""
    task, pos, vocab = config.task, config.pos, config.vocab
    if pos == "none" and task != "copy":
        st.warning(without_positions(TASKS[task], result.eval_accuracy[-1], vocab), icon=":material/warning:")
    elif pos == "none":
        st.info("Copy needs no positions: each output is its own input, carried by the residual stream.")
    elif task != "copy":
        st.caption("Try **Positional encoding: none** and train again: without positions, attention cannot tell "
                   f"where anything is, and the model cannot learn to {TASKS[task]}.")


def attention_section(result: TrainingResult, config: TrainConfig, c: int, ckpt: int) -> None:
    """Section 2: every layer's and head's attention on a held-out sequence at checkpoint `ckpt` (index `c`)."""
    task, seq_len = config.task, config.seq_len
    st.header("2 · Attention, checkpoint by checkpoint")
    probe = result.probe
    probe_target = target_of(probe, task)
    at_ckpt = answer_attention(result.attention[c], probe, probe_target)  # (L, H)
    explain(
        f"The held-out sequence {' '.join(map(str, probe))} through every layer and head at step {ckpt}. "
        f"Rows are queries (the position writing an answer), columns keys. For the {task} task, {PATTERN[task]}. "
        "At step 0 the weights are random and so are the maps."
    )
    st.latex(r"A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),\ "
             r"Q = \operatorname{LN}(H)\,W_q,\ K = \operatorname{LN}(H)\,W_k,\qquad "
             r"\text{attention on the answer} = \frac{1}{T}\sum_i \sum_{j:\,x_j = y_i} A_{ij}")
    show_chart(charts.attention_grid(result.attention[c], probe, cell_size=charts.map_cell_size(seq_len)),
               alt=f"Attention maps of every layer and head at the chosen step, {seq_len} positions by {seq_len}; "
                   "the caption below gives each head's attention on the answer")
    st.caption("Attention on the positions that hold the answer, at this checkpoint: " + "; ".join(
        f"layer {li + 1} head {h + 1}: {at_ckpt[li, h]:.0%}" for li in range(at_ckpt.shape[0])
        for h in range(at_ckpt.shape[1])) + ".")


def own_digits_section(result: TrainingResult, config: TrainConfig, c: int, ckpt: int) -> None:
    """Section 3: the model at checkpoint `ckpt` (index `c`) on the user's own digits: its answer and where it looks."""
    task, seq_len, vocab = config.task, config.seq_len, config.vocab
    probe = result.probe
    st.header("3 · Try your own input")
    explain("Type digits (spaces optional) and see what the model answers at the checkpoint chosen above, "
            "and where it looks to answer.")
    typed = tokens_input("Your digits", "digits", DEFAULT_DIGITS, max_tokens=MAX_SEQ_LEN,
                         help=f"Up to {seq_len} digits from 0 to {vocab - 1}, e.g. 3 1 4 1 or 3141.")
    try:
        x = parse_digits(" ".join(typed), vocab, MAX_SEQ_LEN)
    except ValueError as err:
        st.warning(f"{err} Showing the held-out sequence instead.", icon=":material/edit_off:")
        x = [int(t) for t in probe]
    if len(x) > seq_len:
        st.caption(f"Only the first {seq_len} of your {len(x)} digits are used: the model has {seq_len} positions.")
        x = x[:seq_len]
    offer_run_notebook(config, checkpoint=ckpt, digits=x)
    pred, probs, maps = predict(result.model_at(c), x)
    target = target_of(x, task)
    n_right = int((pred == target).sum())
    st.markdown(
        f"input `{' '.join(map(str, x))}` → model `{' '.join(map(str, pred))}` · correct answer "
        f"`{' '.join(map(str, target))}` · **{n_right} of {len(x)} digits right** at step {ckpt}"
    )
    if len(x) < seq_len:
        st.caption(f"The model only ever saw sequences of {seq_len} digits; shorter ones put the last digit at a "
                   "position that meant something else in training, so expect mistakes.")
    show_chart(charts.attention_grid(maps, x, cell_size=charts.map_cell_size(len(x))),
               alt=ChartName(f"Attention maps of every layer and head for your {len(x)} digits",
                             "Averaged over them, largest weight "
                             f"{largest_weight(maps.mean(axis=(0, 1)), [str(d) for d in x], [str(d) for d in x])}."),
               export=False)
    show_chart(charts.probabilities_map(probs, x, cell_size=charts.map_cell_size(max(len(x), vocab))), export=False,
               alt=ChartName(f"Predicted probability of every digit at each of your {len(x)} positions",
                             f"{n_right} of {len(x)} right; the least sure answer at {probs.max(axis=1).min():.0%}."))


def offer_run_notebook(config: TrainConfig, **view: Any) -> None:
    """The run as a notebook that trains it again: the run's settings, and the `view` of it (the checkpoint shown
    and the digits typed)."""
    offer_notebook("training", task=config.task, pos=config.pos, seq_len=config.seq_len, vocab=config.vocab,
                   d_model=config.d_model, n_heads=config.n_heads, n_layers=config.n_layers, steps=config.steps,
                   lr=config.lr, seed=config.seed, batch=config.batch, n_eval=config.n_eval,
                   n_checkpoints=config.n_checkpoints, **view)


@page_fragment
def page_body() -> None:
    with controls_row():
        task = bound_choice("Task", "task", list(TASKS), "reverse",
                            help="What the model must output at every position. "
                                 + " · ".join(f"{k}: {v}" for k, v in TASKS.items()))
        pos = bound_choice("Positional encoding", "pos", list(POSITIONAL), "sinusoidal",
                           help="How the model learns where each token sits. "
                                + " · ".join(f"{k}: {v}" for k, v in POSITIONAL.items()))
    with controls_row():
        seq_len = int(bound_slider("Sequence length T", "seq_len", 3, MAX_SEQ_LEN, 8,
                                   help=f"Digits per sequence (3 to {MAX_SEQ_LEN})."))
        vocab = int(bound_slider("Vocabulary", "vocab", 2, 10, 10, help="The digits 0 … vocab−1 (2 to 10)."))
        d_model = int(bound_select_slider("d_model", "d_model", D_MODELS, 32, help="Width of every token vector."))
        n_heads = int(bound_select_slider("Heads H", "heads", HEADS, 2,
                                          help="Attention heads per layer; each gets d_k = d_model / H columns."))
        n_layers = int(bound_choice("Layers", "layers", [1, 2], 1, help="Transformer layers (attention + MLP)."))
    with controls_row():
        steps = int(bound_select_slider("Training steps", "steps", STEPS, 400,
                                        help="Adam steps, each on a fresh batch of 64 random sequences."))
        lr = float(bound_select_slider("Learning rate", "lr", LRS, 3e-3, format_func=lambda v: f"{v:g}",
                                       help="Adam's step size. Too small learns slowly, too large is unstable."))
        seed = seed_slider(lesson_seed=False)

    config = TrainConfig(task=task, seq_len=seq_len, vocab=vocab, d_model=d_model, n_heads=n_heads,
                         n_layers=n_layers, pos=pos, steps=steps, lr=lr, seed=seed)
    runs: dict[TrainConfig, Trainer] = st.session_state.setdefault(RUNS_KEY, {})
    trainer = runs.get(config)
    st.caption(
        f"**Task: {TASKS[task]}**, e.g. {' '.join(str(d % vocab) for d in EXAMPLE[:seq_len])} → "
        f"{' '.join(map(str, target_of([d % vocab for d in EXAMPLE[:seq_len]], task)))}. "
        f"{n_parameters(config.architecture, config):,} trainable numbers; d_k = {d_model // n_heads}; "
        f"batches of {config.batch} fresh "
        f"random sequences; accuracy measured on {held_out_size(config):,} held-out sequences "
        "the model never trains on. Same settings and seed, same run, to the last digit."
    )
    show_source(MultiHeadSelfAttention, Block, TinyTransformer, Trainer.step, make_targets,
                title="Show the model and the training step")
    whole_block_link("Each of its layers is the whole Transformer block, pre-LN, with ReLU and d_ff = 4 · d_model.")

    done = trainer is not None and trainer.result.complete
    label = "Train" if trainer is None else "Trained" if done else "Continue training"
    buttons = st.container(horizontal=True)
    if buttons.button(label, key="train", type="primary", icon=":material/model_training:", disabled=done,
                      help="Train this configuration. Finished runs are kept: "
                           "changing a display control never retrains."):
        train_live(config, runs, buttons)
        st.rerun()  # redraw from the stored run: the button now reads "Trained", the live view gives way to the results

    if trainer is None:
        st.info("Not trained yet: press **Train**. Runs you finish are kept for this session, per setting.",
                icon=":material/play_arrow:")
        offer_run_notebook(config, checkpoint=config.steps, digits=None)  # the trained run's view comes with it
    else:
        show_results(trainer)


page_body()
