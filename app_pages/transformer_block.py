"""The whole Transformer block: the residual stream, layer normalisation and the feed-forward network around attention."""

from __future__ import annotations

import itertools

import numpy as np
import streamlit as st

from core.block_reference import empty_encoder_layer, torch_block_outputs, torch_encoder_layer
from core.deep_stack import DepthSweep, StackConfig, depth_sweep, stack_block
from core.multihead_steps import divisors, nearest_divisor
from core.reference import max_abs_diff
from core.transformer_block import (
    GPT2_SMALL,
    LESSON_TOKENS,
    BlockSteps,
    BlockWeights,
    PermutationCheck,
    block_input,
    block_weights,
    feed_forward,
    ffn_permutation_check,
    layer_norm,
    transformer_block,
    weight_counts,
)
from ui.cache import shared_cache
from ui.chart_names import ChartName
from ui.charts import transformer_block as charts
from ui.display import show_chart
from ui.layout import controls_row, fixed_slot, introduction, page_fragment, section, show_source, static_table
from ui.lending import lender
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_choice, bound_select_slider, bound_slider, bound_toggle, seed_slider
from ui.wording import transformer_block as wording

D_MODELS = [4, 8, 12, 16, 24, 32]
#: The link whose rerun is slowest (the benchmark's heaviest setting): the widest block, its widest FFN, 24 blocks.
HEAVIEST_LINK = {"d_model": "32", "heads": "32", "d_ff": "256", "act": "GELU", "ln": "pre-LN (GPT-2)", "layers": "24"}
FF_WIDTHS = (1, 2, 4, 8)  # d_ff as multiples of d_model; 4 is the paper's and GPT-2's
PLACEMENT_NAMES = {"post-LN (the paper)": "post", "pre-LN (GPT-2)": "pre"}
PERMUTATIONS = [",".join(map(str, p)) for p in itertools.permutations(range(len(LESSON_TOKENS)))]
#: Where each of the model's parts is explained (the diagram's boxes), as router paths.
LINKED_PAGES = (("app_pages/worked_example.py", "Tokens and their attention: the worked example"),
                ("app_pages/positional_encoding.py", "Embedding + positional encoding"),
                ("app_pages/multi_head.py", "Multi-head attention"),
                ("app_pages/decoder.py", "Output probabilities: a decoder that writes"))
POST_FORMULA = r"h = \operatorname{LN}_1(x + \operatorname{MHA}(x)),\quad y = \operatorname{LN}_2(h + \operatorname{FFN}(h))"
PRE_FORMULA = r"h = x + \operatorname{MHA}(\operatorname{LN}_1(x)),\quad y = h + \operatorname{FFN}(\operatorname{LN}_2(h))"


@shared_cache(8)
def input_at(d_model: int) -> np.ndarray:
    """The lesson's X at `d_model` (`block_input`), for every part of the page that reads it."""
    return block_input(d_model)


@shared_cache(64)
def weights_at(seed: int, d_model: int, d_ff: int) -> BlockWeights:
    """The block's weights: one draw for every head count, activation and placement (section 2 reads both)."""
    return block_weights(seed, d_model, d_ff)


@shared_cache(128)
def block_at(seed: int, d_model: int, n_heads: int, d_ff: int, activation: str,
             placement: str) -> tuple[BlockSteps, BlockWeights]:
    """The lesson's three tokens through one block, and the block's weights."""
    weights = weights_at(seed, d_model, d_ff)
    return transformer_block(input_at(d_model), weights, n_heads, activation=activation,
                             placement=placement), weights


#: The deep stack: the lesson's three tokens at the lesson's width (d_model 4, one head, d_ff 16), from a fixed
#: seed, so that only its depth, its switches, the activation and the norms' placement change what it shows.
STACK_SEED, STACK_D_MODEL, STACK_HEADS, STACK_D_FF = 0, 4, 1, 16
MAX_STACKED = 24
#: The stack's controls' defaults, by URL key.
STACK_DEFAULTS = {"layers": MAX_STACKED, "residual": True, "norm": True}


@shared_cache(512)
def sweep_at(activation: str, placement: str, depth: int, residual: bool, norm: bool) -> DepthSweep:
    """The deep stack's measurements per depth, autograd included."""
    return depth_sweep(input_at(STACK_D_MODEL), StackConfig(depth, STACK_HEADS, STACK_D_FF, activation, placement,
                                                               residual, norm, STACK_SEED))


@shared_cache(128)
def torch_parity(seed: int, d_model: int, n_heads: int, d_ff: int, activation: str, placement: str,
                 _block: BlockSteps, _weights: BlockWeights) -> tuple[float, float]:
    """max |ours − nn.TransformerEncoderLayer| without and with a causal mask (`_block`, `_weights`: the block at
    these settings, unmasked, and its weights)."""
    x = _block.input
    kw = dict(activation=activation, placement=placement)
    with lender(empty_encoder_layer).borrow(d_model, n_heads, d_ff, **kw) as layer:  # one layer per shape, reloaded
        plain, masked = torch_block_outputs(x, _weights, n_heads, causal=(False, True), layer=layer, **kw)
    ours_masked = transformer_block(x, _weights, n_heads, causal=True, **kw).output
    return max_abs_diff(_block.output, plain), max_abs_diff(ours_masked, masked)


@shared_cache(128)
def first_half_spec(seed: int, d_model: int, n_heads: int, placement: str, _block: BlockSteps,
                    _weights: BlockWeights) -> dict:
    """The block's first half as a chart, built once for every d_ff and activation: attention, its residual and the
    first norm read neither (`block_weights` draws their weights first)."""
    return charts.half_spec(_block, 0, LESSON_TOKENS, (_weights.gamma_1, _weights.gamma_2),
                            (_weights.beta_1, _weights.beta_2), wording.stage_titles(placement))


@shared_cache(128)
def second_half_spec(seed: int, d_model: int, n_heads: int, d_ff: int, activation: str, placement: str,
                     _block: BlockSteps, _weights: BlockWeights) -> dict:
    """The block's second half as a chart, built once per setting."""
    return charts.half_spec(_block, 1, LESSON_TOKENS, (_weights.gamma_1, _weights.gamma_2),
                            (_weights.beta_1, _weights.beta_2), wording.stage_titles(placement))


@shared_cache(128)
def sweep_spec(key: tuple, _sweep: DepthSweep) -> dict:
    """The deep stack's chart, built once per setting (`key`: the sweep's arguments)."""
    return charts.sweep_spec(_sweep)


@shared_cache(128)
def permutation_at(seed: int, d_model: int, d_ff: int, activation: str, perm: tuple[int, ...],
                   _weights: BlockWeights) -> PermutationCheck:
    """The FFN of the shuffled tokens against the FFN's output shuffled (`_weights`: the block's at these settings)."""
    return ffn_permutation_check(input_at(d_model), _weights, perm, activation)


@shared_cache(64)
def permutation_spec(seed: int, d_model: int, d_ff: int, activation: str, perm: tuple[int, ...],
                     _check: PermutationCheck) -> dict:
    return charts.permutation_spec(_check, LESSON_TOKENS, d_model)


@shared_cache(1)
def diagram_spec() -> dict:
    return charts.diagram_spec()


introduction(
    "The whole Transformer block",
    "Attention is half of a Transformer block. Around it sit a **residual connection** (each sub-layer's output is "
    "added to its input), **layer normalisation** (each token's vector rescaled to mean 0 and variance 1, then "
    "by learned γ and β) and a **feed-forward network** applied to every token on its own. A model is a stack of "
    "such blocks; here are the lesson's three tokens going through one, number by number.",
)


def norm_controls() -> tuple[str, str]:
    """The activation and where the norms go: both the block and the deep stack follow them."""
    with controls_row():
        activation = str(bound_choice("Activation φ", "act", ["ReLU", "GELU"], "ReLU",
                                      help="ReLU (the paper) or GELU (GPT-2, BERT), PyTorch's exact GELU.")).lower()
        placement = PLACEMENT_NAMES[bound_choice("Layer norm", "ln", list(PLACEMENT_NAMES), "post-LN (the paper)",
                                                 help="After each residual sum (post-LN) or before each "
                                                      "sub-layer (pre-LN).")]
    return activation, placement


@page_fragment
def page_body() -> None:
    """The controls both parts of the page follow, then its two parts, each a fragment nested in this one: the block
    (sections 1 to 4) and the deep stack (section 5). A step of either's own controls reruns that part alone; a
    change of the activation or the norms' placement reruns both."""
    activation, placement = norm_controls()
    block_sections(activation, placement)
    deep_stack(activation, placement)


@page_fragment
def block_sections(activation: str, placement: str) -> None:
    """Sections 1 to 4: the block at the page's seed and widths (its sliders rerun this part alone)."""
    seed, d_model, n_heads, d_ff = block_controls()
    block, weights = block_at(seed, d_model, n_heads, d_ff, activation, placement)
    stages_section(block, [first_half_spec(seed, d_model, n_heads, placement, block, weights),
                           second_half_spec(seed, d_model, n_heads, d_ff, activation, placement, block, weights)], seed)
    placement_section(seed, d_model, n_heads, d_ff, activation, placement)
    perm = per_position_section(seed, d_model, d_ff, activation, weights)
    torch_section(seed, d_model, n_heads, d_ff, activation, placement, block, weights)
    depth, residual, norm = stack_switches()
    offer_notebook("transformer_block", seed=seed, d_model=d_model, heads=n_heads, d_ff=d_ff, act=activation,
                   ln=placement, layers=depth, residual=residual, norm=norm, perm=list(perm))


#: The deep stack's section number: it comes last, after the block's sections.
STACK_SECTION = 5


@page_fragment
def deep_stack(activation: str, placement: str) -> None:
    """Section 5 and the question on it: a fragment after the block's, since neither the block's sliders nor the
    stack's own controls change the other (a step of either reruns its part alone)."""
    gradient_quiz(stack_section(activation, placement))


def block_controls() -> tuple[int, int, int, int]:
    """The block's seed, widths and heads, all in the URL."""
    with controls_row():
        seed = seed_slider()
        d_model = int(bound_select_slider("d_model", "d_model", D_MODELS, 4,
                                          help="Width of every token vector. 4 is the lesson's; wider adds fixed "
                                               "columns to its X."))
        keep_heads_dividing(d_model)
        n_heads = int(bound_select_slider(
            "Heads H", "heads", divisors(d_model), 1,
            help=f"Only divisors of d_model = {d_model}. One head at d_model 4 is the worked example's attention."))
        keep_ff_ratio(d_model)
        d_ff = int(bound_select_slider("d_ff", "d_ff", [k * d_model for k in FF_WIDTHS], 4 * d_model,
                                       help="Width of the feed-forward network's hidden layer: 4 · d_model in the "
                                            "paper and in GPT-2."))
    return seed, d_model, n_heads, d_ff


def keep_heads_dividing(d_model: int) -> None:
    """A head count the new d_model does not divide moves to the divisor closest to it, before the slider is drawn.

    The slider's default stays 1 whatever the session chose: a link leaves out a value equal to the default, so a
    default that followed the session would make a copied link open another head count.
    """
    previous = st.session_state.get("heads")
    if isinstance(previous, int) and d_model % previous:
        st.session_state["heads"] = nearest_divisor(d_model, previous)


#: Session-state key of the d_model the d_ff slider was last drawn for.
LAST_D_MODEL = "_block_last_d_model"


def keep_ff_ratio(d_model: int) -> None:
    """When d_model moves, keep d_ff's multiple of it (4 · d_model stays 4 · d_model), before the slider is drawn."""
    last = st.session_state.get(LAST_D_MODEL)
    d_ff = st.session_state.get("d_ff")
    if last not in (None, d_model) and isinstance(d_ff, int) and d_ff % last == 0 and d_ff // last in FF_WIDTHS:
        st.session_state["d_ff"] = d_ff // last * d_model
    st.session_state[LAST_D_MODEL] = d_model


def model_section() -> None:
    """Section 0: the whole model, and where each part is explained."""
    section("0 · Where attention lives",
            "A Transformer turns tokens into vectors, adds their positions, then sends them through N identical "
            "blocks. Each block is attention, then add & norm, then the feed-forward network, then add & norm "
            "again. This page is about the orange parts; the links lead to the others.")
    show_chart(diagram_spec(), alt=ChartName(
        "Diagram of the whole model, 7 boxes top to bottom: tokens, embedding and positional encoding, a block of "
        "multi-head attention, add and norm, feed-forward network, add and norm, repeated N times, then linear "
        "and softmax to output probabilities", "Each box names the page that explains it."))
    with st.container(horizontal=True):
        for path, label in LINKED_PAGES:
            st.page_link(path, label=label, icon=":material/arrow_forward:")


def stages_section(block: BlockSteps, specs: list[dict], seed: int) -> None:
    """Section 1: the three tokens through every stage of the block, in the order of its placement: each half of
    the block (a sub-layer, its residual and its norm) one chart, under its stages' texts and formulas."""
    t, d_model = block.input.shape
    lesson = (" Seed 0, d_model 4, one head: Concat(heads) below is the worked example's output, the lesson's "
              "printed numbers." if block.attention.n_heads == 1 and d_model == 4 and seed == 0 else "")
    intro = (f"X is the worked example's ({t} tokens × {d_model}). Hover a cell for its arithmetic; every matrix is "
             f"also in “Show the numbers” under section 4.{lesson}")
    titles = wording.stage_titles(block.placement)
    sub = "MHA(x)" if block.placement == "post" else r"MHA(LN_1(x))"
    for k, (half, spec) in enumerate(zip(charts.HALVES[block.placement], specs, strict=True)):
        stages = [(titles[name], wording.STAGES[name][1],
                   wording.STAGES[name][2].replace("{sub}", rf"\operatorname{{{sub}}}")) for name in half]
        if k == 0:  # the section's heading and the first half's stages: one element
            section("1 · The lesson's three tokens through one block", intro, stages=stages)
        else:
            section("", stages=stages)
        show_chart(spec, alt=wording.half_name(half, block, titles))


def placement_section(seed: int, d_model: int, n_heads: int, d_ff: int, activation: str, placement: str) -> None:
    """Section 2: post-LN against pre-LN, each formula, and what each does to the stream."""
    chosen = {"post": "post-LN", "pre": "pre-LN"}
    formulas = [rf"\text{{{chosen[name]}}}:\quad {formula}" + (r"\;\blacktriangleleft\ \text{shown}"
                                                              if name == placement else "")
                for name, formula in (("post", POST_FORMULA), ("pre", PRE_FORMULA))]
    section("2 · Post-LN or pre-LN",
            "The original paper normalises after each residual sum (post-LN). GPT-2 and nearly every later model "
            "normalise the sub-layer's input instead (pre-LN), so the residual stream itself is never normalised "
            "inside the block: x passes through untouched, plus the updates.",
            r"\begin{aligned}&" + r" \\[4pt] &".join(formulas) + r"\end{aligned}")  # the lines left-aligned
    post, pre = (block_at(seed, d_model, n_heads, d_ff, activation, name)[0].output for name in ("post", "pre"))
    st.caption(wording.output_sizes(post, pre, input_at(d_model), STACK_SECTION))


def stack_section(activation: str, placement: str) -> DepthSweep:
    """The deep stack at random initialisation, with and without the residual and the norm."""
    section(f"{STACK_SECTION} · Why the residual, and why the norm: a deep stack",
            "Stack many such blocks, freshly initialised (random weights of variance 1/fan_in, γ = 1, β = 0, from a "
            f"fixed seed, {STACK_SEED}), at the lesson's width (d_model {STACK_D_MODEL}, {STACK_HEADS} head, d_ff "
            f"{STACK_D_FF}) with the activation and norm placement above, and follow the three tokens up the "
            "stack. Left: the size of the residual stream against the size of each block's update. Middle: how much each token still points where its input "
            "did, and how alike the tokens have become. Right: the gradient that reaches each block's weights "
            "from the loss L = Σ R ⊙ y (R a fixed random direction), by autograd through the whole stack.")
    with controls_row():
        depth = int(bound_slider("Blocks stacked", "layers", 1, MAX_STACKED, STACK_DEFAULTS["layers"],
                                 help=f"How many blocks the stack has (1 to {MAX_STACKED})."))
        residual = bound_toggle("Residual connections", "residual", STACK_DEFAULTS["residual"],
                                help="x + F(x) in every block, or F(x).")
        norm = bound_toggle("Layer norms", "norm", STACK_DEFAULTS["norm"], help="LayerNorm in every block, or none.")
    sweep = sweep_at(activation, placement, depth, residual, norm)
    show_chart(sweep_spec((activation, placement, depth, residual, norm), sweep),
               alt=ChartName(f"Three line charts against depth, 1 to {depth} blocks: the stream's and the updates' "
                             "sizes, the cosines, and the gradient reaching each block",
                             wording.sweep_numbers(sweep)))
    st.markdown(wording.stack_findings(sweep))
    with fixed_slot():
        if not sweep.config.residual:
            st.caption("Without the residual every block must pass the whole signal through its own weights; "
                       "the backward pass multiplies by every block's Jacobian on its way down. Switch the residual "
                       "on to compare the gradient at block 1.")
    return sweep


def stack_switches() -> tuple[int, bool, bool]:
    """The stack's depth, residual and norm switches as its fragment last drew them (its defaults before)."""
    return (int(st.session_state.get("layers", STACK_DEFAULTS["layers"])),
            bool(st.session_state.get("residual", STACK_DEFAULTS["residual"])),
            bool(st.session_state.get("norm", STACK_DEFAULTS["norm"])))


def per_position_section(seed: int, d_model: int, d_ff: int, activation: str,
                         weights: BlockWeights) -> tuple[int, ...]:
    """Section 3: the FFN is the same function at every position; where a block's weights are. Returns the
    order of the shuffled positions."""
    section("3 · The feed-forward network works per position",
            "Shuffle the tokens: the feed-forward network's output is shuffled the same way, exactly, because "
            "each row goes through the same arithmetic wherever it stands. It mixes nothing across positions: "
            "only attention does that. The table under it says where a block's weights are (the weight matrices; "
            "biases and γ, β add a few more).",
            r"\operatorname{FFN}(P\,x) = P\,\operatorname{FFN}(x)")
    positions = ", ".join(f"{i} = {t}" for i, t in enumerate(LESSON_TOKENS))
    perm_text = str(bound_choice(f"New order of the positions ({positions})", "perm", PERMUTATIONS, "2,0,1",
                                 help="Row i of the shuffled tokens is the token at position perm[i]."))
    perm = tuple(int(i) for i in perm_text.split(","))
    check = permutation_at(seed, d_model, d_ff, activation, perm, weights)
    show_chart(permutation_spec(seed, d_model, d_ff, activation, perm, check),
               alt=ChartName(f"Heatmaps of the FFN of the shuffled tokens and of the FFN's output shuffled, "
                             f"{len(perm)} tokens by {d_model} dimensions each",
                             f"Shuffled: {' '.join(LESSON_TOKENS[i] for i in perm)}. Largest difference "
                             f"{check.max_difference:.1e}."))
    st.metric("max |FFN(P x) − P FFN(x)|", f"{check.max_difference:.1e}")
    counts = [weight_counts(d_model, d_ff), weight_counts(*GPT2_SMALL)]
    static_table({"model": [f"this page (d_model {d_model}, d_ff {d_ff})", "GPT-2 small (768, 3072)"],
                  "attention 4·d_model²": [c.attention for c in counts],
                  "FFN 2·d_model·d_ff": [c.ffn for c in counts],
                  "FFN's share": [c.ffn_share for c in counts]},
                 {"attention 4·d_model²": "{:,}", "FFN 2·d_model·d_ff": "{:,}", "FFN's share": "{:.1%}"})
    return perm


def torch_section(seed: int, d_model: int, n_heads: int, d_ff: int, activation: str, placement: str,
                  block: BlockSteps, weights: BlockWeights) -> None:
    """Section 4: the same block through torch.nn.TransformerEncoderLayer."""
    section("4 · Cross-check with PyTorch's own block",
            f"The same X and weights through `torch.nn.TransformerEncoderLayer({d_model}, {n_heads}, "
            f"dim_feedforward={d_ff}, dropout=0, activation=\"{activation}\", norm_first={placement == 'pre'}, "
            "batch_first=True)` in **float64**, X twice in one batch, the second copy under a causal mask "
            "(`src_mask`, −∞ above the diagonal), each against our NumPy block with the same mask. PyTorch holds "
            "the weights transposed (`linear1.weight` = W₁ᵀ, …) and the attention's biases at 0.")
    plain, causal = torch_parity(seed, d_model, n_heads, d_ff, activation, placement, block, weights)
    with st.container(horizontal=True):
        st.metric("max |NumPy − PyTorch|, no mask", f"{plain:.1e}")
        st.metric("max |NumPy − PyTorch|, causal mask", f"{causal:.1e}")


def gradient_quiz(sweep: DepthSweep) -> None:
    """Does the gradient at block 1 grow, shrink or stay, against the top block's, at these settings?"""
    c, ratio = sweep.config, wording.gradient_ratio(sweep)
    options = ["it is over 10 times smaller", "about the same (within 10 times)", "it is over 10 times larger"]
    answer = options[0] if ratio < 0.1 else options[2] if ratio > 10 else options[1]
    switches = f"residual {'on' if c.residual else 'off'} and norm {'on' if c.norm else 'off'}"
    predict_then_reveal(
        f"{c.depth} blocks, {c.placement}-LN, {switches}: compared with the gradient reaching the top block's "
        "weights, how large is the gradient reaching block 1's?",
        options, answer,
        f"Block 1 gets {sweep.grad_norm[0]:.3g}, block {c.depth} gets {sweep.grad_norm[-1]:.3g}: a ratio of "
        f"{ratio:.3g}. Switch the residual off (or on) in section {STACK_SECTION} and ask again.",
        key="transformer_block_gradient",
    )


model_section()  # no control changes it: outside the page's fragment, drawn on a full run only
page_body()
show_source(transformer_block, layer_norm, feed_forward, torch_encoder_layer, stack_block, depth_sweep)  # likewise
