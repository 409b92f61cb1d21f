"""The training page's notebook: the tiny Transformer, its digit task, Adam written out and the training loop, at the
page's seed and settings; on one CPU thread it reaches the page's losses step for step. Then its curves, the held-out
sequence's attention at the chosen checkpoint, and the model's answer for the digits typed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, Notebook
from notebooks.tiny_model import MODEL, adam_cells

TITLE = "Watch attention learn: a tiny Transformer, trained"
TASKS = ("reverse", "copy", "sort", "first")
POSITIONAL = ("sinusoidal", "learned", "none")
#: The largest vocab**seq_len the sequence codes hold (int64), as the page's runs allow.
MAX_CODE = 2**62


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The run's settings (task, positions, sizes, steps, learning rate, seed, batch, held-out size, checkpoints),
    the checkpoint shown and the digits typed (None: the held-out sequence, as the page falls back to)."""
    task, pos = str(state["task"]), str(state["pos"])
    ints = {k: int(state[k]) for k in ("seq_len", "vocab", "d_model", "n_heads", "n_layers", "steps", "seed",
                                       "batch", "n_eval", "n_checkpoints")}
    lr = float(state["lr"])
    if task not in TASKS or pos not in POSITIONAL:
        raise ValueError(f"task {task!r}, positional encoding {pos!r}.")
    if min(ints.values()) < 0 or min(ints[k] for k in ints if k != "seed") < 1 or ints["seq_len"] < 2 \
            or ints["vocab"] < 2 or ints["d_model"] % ints["n_heads"] or ints["vocab"] ** ints["seq_len"] > MAX_CODE \
            or not lr > 0:
        raise ValueError(f"no run at {ints}, lr = {lr}.")
    digits = state.get("digits")
    digits = None if digits is None else [int(d) for d in digits]
    if digits is not None and not (1 <= len(digits) <= ints["seq_len"]
                                   and all(0 <= d < ints["vocab"] for d in digits)):
        raise ValueError(f"the digits {digits} for a model of {ints['seq_len']} positions and {ints['vocab']} digits.")
    checkpoint = int(state.get("checkpoint", ints["steps"]))
    return {"task": task, "pos": pos, **{k: ints[k] for k in ("seq_len", "vocab", "d_model", "n_heads", "n_layers")},
            "steps": ints["steps"], "lr": lr, "seed": ints["seed"], "batch": ints["batch"], "n_eval": ints["n_eval"],
            "n_checkpoints": ints["n_checkpoints"], "checkpoint": checkpoint, "digits": digits}


def cells(nb: Notebook) -> None:
    task_cells(nb)
    model_cells(nb)
    training_cells(nb)
    results_cells(nb)


def task_cells(nb: Notebook) -> None:
    """The task, its targets, and the data: a held-out set and fresh training batches that never meet it."""
    nb.md(r"""
A tiny Transformer reads a sequence of T digits and must write one output digit at every position: the sequence
reversed, copied, sorted, or its first digit repeated. Nobody tells it where to look: Adam on the prediction error
shapes W_q, W_k and W_v until each position looks where its answer is.

$$H = \operatorname{Embed}(x) + P,\quad H \leftarrow H + \operatorname{MultiHead}(\operatorname{LN}(H)),\quad
H \leftarrow H + \operatorname{MLP}(\operatorname{LN}(H))\ (\times\,\text{layers}),\quad
\hat y_i = \operatorname{softmax}(h_i W_{out})$$

Everything runs on **one CPU thread**: the same settings and seed then give the same run, to the last digit, as the
page's.
""")
    nb.code('''
torch.set_num_threads(1)

def make_targets(x, task):
    """The answer (B, T) the model must write for the inputs x (B, T)."""
    if task == "reverse":
        return x.flip(-1)
    if task == "copy":
        return x.clone()
    if task == "sort":
        return x.sort(dim=-1).values
    return x[:, :1].expand_as(x).clone()  # "first": (B, 1) -> (B, T)

example = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8][:seq_len]]) % vocab  # (1, T)
print(f"task {task!r}:", example[0].tolist(), "->", make_targets(example, task)[0].tolist())
''')
    nb.md(r"""
## 1 · The data

Each sequence has a code, its digits read in base `vocab`. A held-out set of distinct sequences is drawn first, from
a generator of its own; every training batch is `batch` fresh random sequences drawn from the seed's generator, with
any held-out sequence thrown away, so the accuracy is measured on sequences the model never trained on.
""")
    nb.code('''
def sequence_codes(x, vocab):
    """Each row of x (B, T) as one integer, its digits in base vocab: (B,)."""
    powers = vocab ** torch.arange(x.shape[-1] - 1, -1, -1, dtype=torch.int64)  # (T,)
    return (x.to(torch.int64) * powers).sum(-1)  # (B, T) * (T,) -> (B,)

def held_out_set(n_eval, seq_len, vocab, seed):
    """n distinct sequences (n, T) in the order drawn; never more than a quarter of all vocab**seq_len."""
    n = min(n_eval, max(1, vocab**seq_len // 4))
    g = torch.Generator().manual_seed(seed * 1_000_003 + 1)  # a stream of its own, apart from training's
    x = torch.empty(0, seq_len, dtype=torch.int64)
    while True:
        x = torch.cat([x, torch.randint(0, vocab, (2 * n + 16, seq_len), generator=g)])
        _, first = np.unique(sequence_codes(x, vocab).numpy(), return_index=True)
        if len(first) >= n:
            return x[torch.from_numpy(np.sort(first)[:n])]  # the first n distinct

def training_batch(g, held_out_codes):
    """batch random sequences (batch, T) from the generator g, none of them held out."""
    rows, have = [], 0
    while have < batch:
        x = torch.randint(0, vocab, (2 * batch, seq_len), generator=g)
        x = x[~torch.isin(sequence_codes(x, vocab), held_out_codes)]
        rows.append(x)
        have += len(x)
    return torch.cat(rows)[:batch]

x_eval = held_out_set(n_eval, seq_len, vocab, seed)  # (N, T)
y_eval = make_targets(x_eval, task)  # (N, T)
eval_codes = sequence_codes(x_eval, vocab)  # (N,)
probe = x_eval[0]  # (T,): the held-out sequence whose attention is drawn
print(f"{len(x_eval)} held-out sequences; the first, drawn below:", probe.tolist(), "->", y_eval[0].tolist())
''')


def model_cells(nb: Notebook) -> None:
    """Positions, attention, the pre-norm block, the model built from the seed, and Adam."""
    nb.md(r"""
## 2 · The model

Token embedding plus a position vector (fixed sines and cosines, learned, or none), then pre-norm blocks: multi-head
self-attention and a 4x-wide MLP, each added back to the residual stream, then a readout over the digits. Attention
returns its weights, so they can be drawn; training and scoring need no weights (`need_weights=False`) and call
PyTorch's `scaled_dot_product_attention`, the same formula in one fused kernel, as the page does.

$$A = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),\qquad
Q = \operatorname{LN}(H)\,W_q,\ K = \operatorname{LN}(H)\,W_k,\ V = \operatorname{LN}(H)\,W_v,\qquad
d_k = d_{model} / H$$
""")
    nb.code(MODEL + '''
torch.manual_seed(seed)  # the initial weights: PyTorch's generator, seeded, drawn in the order the layers are made
model = TinyTransformer(vocab, seq_len, d_model, n_heads, n_layers, pos)
print(f"{sum(p.numel() for p in model.parameters()):,} trainable numbers; d_k = {d_model // n_heads}")
''')
    adam_cells(nb)


def training_cells(nb: Notebook) -> None:
    """The loss, the checkpoints and the loop."""
    nb.md(r"""
## 4 · Training

Each step: a fresh batch, the mean cross-entropy over every position of every sequence, one Adam step. At the
checkpoints (closer together early on, where attention changes fastest) the model is scored on the held-out set and
the held-out sequence's attention and the weights are kept.

$$\mathcal{L} = -\frac{1}{BT}\sum_{b,i} \log \hat y_{b,i}[y_{b,i}]$$
""")
    nb.code('''
import copy

@torch.no_grad()
def evaluate(model, x, y):
    """(loss, per-token accuracy, whole-sequence accuracy) on inputs x and targets y (N, T)."""
    logits, _ = model(x, need_weights=False)  # (N, T, vocab)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())  # (N*T, vocab) vs (N*T,)
    right = logits.argmax(-1) == y  # (N, T)
    return float(loss), float(right.float().mean()), float(right.all(-1).float().mean())

checkpoints = sorted(set(np.round(steps * np.linspace(0.0, 1.0, n_checkpoints + 1) ** 2).astype(int).tolist()))
train_loss, checkpoint_steps, eval_loss, eval_accuracy, eval_sequence_accuracy = [], [], [], [], []
attention, states = [], []

def record(step):
    """At a checkpoint: the held-out scores, the probe's attention (n_layers, H, T, T) and the weights."""
    if step not in checkpoints:
        return
    loss, acc, seq_acc = evaluate(model, x_eval, y_eval)
    checkpoint_steps.append(step)
    eval_loss.append(loss)
    eval_accuracy.append(acc)
    eval_sequence_accuracy.append(seq_acc)
    with torch.no_grad():
        attention.append(model(probe[None])[1][0].numpy().astype(np.float64))  # (1, L, H, T, T) -> (L, H, T, T)
    states.append(copy.deepcopy(model.state_dict()))

generator = torch.Generator().manual_seed(seed)  # the training batches' stream
record(0)
for step in range(1, steps + 1):
    x = training_batch(generator, eval_codes)  # (batch, T)
    logits, _ = model(x, need_weights=False)  # (batch, T, vocab): the fused attention, no weights kept
    loss = F.cross_entropy(logits.flatten(0, 1), make_targets(x, task).flatten())  # (batch*T, vocab) vs (batch*T,)
    train_loss.append(optimiser.descend(loss))
    record(step)
    if step in checkpoints:
        print(f"step {step:5d} · batch loss {train_loss[-1]:.4f} · held-out loss {eval_loss[-1]:.4f} · "
              f"accuracy {eval_accuracy[-1]:.1%}")
''')


def results_cells(nb: Notebook) -> None:
    """The curves, the probe's attention at the checkpoint shown, and the model's answer for the digits typed."""
    nb.md("""
## 5 · Learning curves

The training batches' loss averaged between checkpoints (one batch is too noisy to draw), the held-out loss, and the
held-out accuracy, per digit and per whole sequence.
""")
    nb.code('''
ends = [s for s in checkpoint_steps if s > 0]
batch_means = [float(np.mean(train_loss[a:b])) for a, b in zip([0, *ends[:-1]], ends)]
losses = pd.DataFrame({"step": [*ends, *checkpoint_steps], "value": [*batch_means, *eval_loss],
                       "curve": ["training batches"] * len(ends) + ["held-out"] * len(checkpoint_steps)})
accuracies = pd.DataFrame({"step": checkpoint_steps * 2, "value": eval_accuracy + eval_sequence_accuracy,
                           "curve": ["per token"] * len(checkpoint_steps)
                                    + ["whole sequence right"] * len(checkpoint_steps)})
line = lambda df, title, y: alt.Chart(df, title=title).mark_line(point=True).encode(
    x=alt.X("step:Q", title="training step"), y=alt.Y("value:Q", title=y), color=alt.Color("curve:N", title=None),
    tooltip=["curve", "step", alt.Tooltip("value:Q", format=".4f")]).properties(width=300, height=220)
alt.hconcat(line(losses, "Loss (cross-entropy)", "loss"),
            line(accuracies, "Accuracy on held-out sequences", "accuracy"))
''')
    nb.md(r"""
## 6 · Attention at a checkpoint

The held-out sequence through every layer and head at the chosen checkpoint: rows are queries (the position writing
an answer), columns keys. The share of attention on the positions that hold each query's answer:

$$\frac{1}{T}\sum_i \sum_{j:\,x_j = y_i} A_{ij}$$
""")
    nb.code(HEATMAP + '''
c = checkpoint_steps.index(checkpoint)
maps = attention[c]  # (n_layers, H, T, T)
labels = [f"{t}:{d}" for t, d in enumerate(probe.tolist())]
holds_answer = (y_eval[0][:, None] == probe[None, :]).numpy()  # (T, T): key j holds query i's answer
on_answer = (maps * holds_answer).sum(-1).mean(-1)  # (n_layers, H)
for layer in range(n_layers):
    for h in range(n_heads):
        print(f"step {checkpoint}, layer {layer + 1} head {h + 1}: "
              f"{on_answer[layer, h]:.0%} of the attention on the answer")
alt.hconcat(*(heatmap(maps[layer, h], labels, labels, f"layer {layer + 1} · head {h + 1}", scheme="viridis")
              for layer in range(n_layers) for h in range(n_heads)))
''')
    nb.md("""
## 7 · The model on your digits

The model as it was at the checkpoint, on the digits typed on the page (or the held-out sequence): its answer, and
the probability it gave every digit at each position.
""")
    nb.code('''
at_checkpoint = TinyTransformer(vocab, seq_len, d_model, n_heads, n_layers, pos)
at_checkpoint.load_state_dict(states[c])
x = torch.tensor(probe.tolist() if digits is None else digits)  # (T,)
with torch.no_grad():
    logits, your_maps = at_checkpoint(x[None])  # (1, T, vocab), (1, L, H, T, T)
    probs = logits[0].softmax(-1)  # (T, vocab)
prediction = probs.argmax(-1).numpy()
target = make_targets(x[None], task)[0].numpy()
probs = probs.numpy().astype(np.float64)
print(f"input {x.tolist()} -> model {prediction.tolist()}, correct answer {target.tolist()}: "
      f"{int((prediction == target).sum())} of {len(x)} digits right at step {checkpoint}")
heatmap(probs, [f"{t}:{d}" for t, d in enumerate(x.tolist())], [str(d) for d in range(vocab)],
        "probability of every digit at each position")
''')
