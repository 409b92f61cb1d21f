"""Order and permutation: self-attention alone cannot tell word order; positional encoding can."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import multi_head_attention, positional_encoding
from core.embeddings import embed_tokens, random_projections
from core.permutation import (
    PermutationCheck,
    default_permutation,
    format_permutation,
    inverse_permutation,
    parse_permutation,
    permutation_check,
    random_permutation,
    torch_permutation_difference,
)
from ui.cache import shared_cache
from ui.chart_names import ChartName, largest_weight, matrix_name, value_range
from ui.charts import permutation as charts
from ui.charts.heatmap import unique_labels
from ui.display import show_chart
from ui.layout import controls_row, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_toggle, seed_slider, tokens_input
from ui.wording.permutation import ROUNDING, maps_agree, outputs_agree

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"pe": "true"}

DEFAULT_TEXT = "the cat sat on the mat"
D_MODEL, N_HEADS = 16, 4  # the lesson's nn.MultiheadAttention(embed_dim=16, num_heads=4)
MAX_WORDS = 16  # the longest sentence the box takes
PERM_KEY = "perm"
SHUFFLES = "_perm_shuffles"  # how many times Shuffle was pressed: the seed of the next shuffle
LAST_T = "_perm_last_t"  # the sentence length the permutation box was last valid for
LAST_VALID = "_perm_last_valid"


@shared_cache(128)
def torch_difference(tokens: tuple[str, ...], seed: int, perm: tuple[int, ...], add_pe: bool) -> float:
    """The lesson's nn.MultiheadAttention permutation check (float32) on this page's inputs."""
    x = embed_tokens(tokens, D_MODEL, seed)
    return torch_permutation_difference(x, random_projections(D_MODEL, seed), np.array(perm), N_HEADS, add_pe=add_pe)


@shared_cache(128)
def chart_specs(tokens: tuple[str, ...], seed: int, perm: tuple[int, ...], add_pe: bool,
                _check: PermutationCheck) -> dict[str, dict]:
    """The page's charts, built once per input (the cache key); `_check` is that input's result."""
    return charts.page_specs(_check, tokens)


def shuffle(n: int) -> None:
    """Shuffle button callback: write a new random permutation into the box (before it is drawn)."""
    current = st.session_state.get(PERM_KEY, "")
    for _ in range(20):  # a different one from what is shown, when there is one
        st.session_state[SHUFFLES] = st.session_state.get(SHUFFLES, 0) + 1
        text = format_permutation(random_permutation(n, seed=st.session_state[SHUFFLES]))
        if text != current or n < 3:
            break
    st.session_state[PERM_KEY] = text


introduction(
    "Order and permutation",
    "Nothing in softmax(QKᵀ/√d_k)V mentions *where* a token sits: every score compares a query with a "
    "key by content only. So shuffle the words and self-attention hands back exactly the same output "
    "vectors, shuffled the same way; “the dog bit the man” and “the man bit the dog” look alike to it. "
    "Write the shuffle as a permutation matrix P (row i of PX is row perm[i] of X):",
    r"\operatorname{Attn}(PX) = \operatorname{softmax}\!\left(\frac{P Q K^\top P^\top}{\sqrt{d_k}}\right) P V"
    r" = P A P^\top P V = P\,\operatorname{Attn}(X)",
)


@page_fragment
def page_body() -> None:
    with controls_row():
        tokens = tokens_input("Sentence", "text", DEFAULT_TEXT, max_tokens=MAX_WORDS,
                              help=f"Up to {MAX_WORDS} words separated by spaces. A repeated word gets the same "
                                   "embedding.")
        seed = seed_slider(lesson_seed=False)
    perm, add_pe = permutation_controls(len(tokens))
    offer_notebook("permutation", text=" ".join(tokens), seed=seed, perm=perm, pe=add_pe)
    x = embed_tokens(tokens, D_MODEL, seed)
    check = permutation_check(x, random_projections(D_MODEL, seed), perm, n_heads=N_HEADS, add_pe=add_pe)
    specs = chart_specs(tuple(tokens), seed, tuple(int(p) for p in perm), add_pe, check)
    shuffled_sentence(tokens, perm, seed)
    inputs_section(specs, check, add_pe)
    maps_section(specs, check, unique_labels(tokens))
    outputs_section(specs, check, add_pe)
    torch_section(tokens, seed, perm, add_pe)
    same_vector_quiz(check, add_pe)
    show_source(permutation_check, inverse_permutation, positional_encoding, multi_head_attention,
                torch_permutation_difference, parse_permutation)


def permutation_controls(T: int) -> tuple[np.ndarray, bool]:
    """The permutation box (reset to the default one when the sentence's length changes), Shuffle, and the PE
    toggle; returns the permutation in use and whether positional encoding is added."""
    # A new sentence length makes the old permutation meaningless: start again from the default one.
    # (Written before the box is drawn; `value=""` then avoids Streamlit's "default value and Session
    # State" warning, and the box shows the session value anyway.)
    default_text = format_permutation(default_permutation(T))
    reset = st.session_state.get(LAST_T, T) != T
    if reset:
        st.session_state[PERM_KEY] = default_text
    st.session_state[LAST_T] = T

    with controls_row():
        # No ui.url_state helper exists for free text other than sentences, so the box is bound here.
        perm_text = st.text_input(
            "Permutation", value="" if reset else default_text, key=PERM_KEY, bind="query-params",
            help=f"Comma-separated new order of the positions 0…{T - 1}: position i of the shuffled sentence gets "
                 f"the word that was at position perm[i]. {default_text} moves every word one place right.",
        )
        st.button("Shuffle", on_click=shuffle, args=(T,), icon=":material/shuffle:",
                  help="Draw a new random permutation of the positions.")
        add_pe = bound_toggle("add positional encoding", "pe", False,
                              help="Add the sinusoidal encoding of each *position* to the embedding sitting there.")
    perm = permutation_in_use(perm_text, T)
    if reset:
        st.info(f"The sentence now has {T} words, so the permutation was reset to {default_text}.")
    return perm, add_pe


def permutation_in_use(perm_text: str, T: int) -> np.ndarray:
    """The permutation typed in the box or, when it is not one, the last valid one (else the default) and an error."""
    try:
        perm = parse_permutation(perm_text, T)
        st.session_state[LAST_VALID] = perm.tolist()
    except ValueError as exc:
        last = st.session_state.get(LAST_VALID)
        perm = np.array(last) if last is not None and len(last) == T else default_permutation(T)
        st.error(f"Permutation “{perm_text}”: {exc} Using {format_permutation(perm)} instead.")
    return perm


def shuffled_sentence(tokens: list[str], perm: np.ndarray, seed: int) -> None:
    """The sentence before and after the shuffle, and what runs on it."""
    T = len(tokens)
    st.markdown(f"**Original:** {' '.join(tokens)}  \n**Shuffled:** {' '.join(tokens[p] for p in perm)}")
    with fixed_slot():
        if np.array_equal(perm, np.arange(T)):
            st.info(("A single word cannot be reordered. " if T == 1 else "This is the identity permutation: ")
                    + "nothing moves, so every difference below is exactly 0, "
                    "with or without positional encoding.")

    st.caption(f"{T} tokens, d_model = {D_MODEL}, {N_HEADS} heads (the lesson's `nn.MultiheadAttention(16, 4)`), "
               f"random embeddings and W_q, W_k, W_v, W_o from seed {seed}.")


def inputs_section(specs: dict[str, dict], check: PermutationCheck, add_pe: bool) -> None:
    """Section 1: the original and the shuffled input, with or without positional encoding."""
    section(
        "1 · What goes in",
        "With positional encoding, the encoding belongs to the *slot*, not to the word: after shuffling, "
        "each word gets the encoding of the position it moved to. So the shuffled input is no longer the "
        "original rows reordered."
        if add_pe else
        "Without positional encoding the shuffled input is literally the same rows in a new order.",
        r"\text{input} = X + PE \quad\text{vs.}\quad PX + PE \;\ne\; P(X + PE)" if add_pe else
        r"\text{input} = X \quad\text{vs.}\quad PX",
    )
    original = matrix_name("Heatmaps of the original and the shuffled input", check.x, "tokens", "dimensions")
    show_chart(specs["inputs"], alt=ChartName(original.alt, f"The original's values {value_range(check.x)}."))


def maps_section(specs: dict[str, dict], check: PermutationCheck, labels: list[str]) -> None:
    """Section 2: the attention map of the shuffled input beside the original one reordered (P A Pᵀ)."""
    section(
        "2 · Attention maps: reordered, not changed",
        "Left, the map of the original sentence. Middle, the map computed from scratch on the shuffled "
        "sentence. Right, the left map with its rows and columns simply put in the shuffled order (PAPᵀ). "
        "Every word keeps its label, so compare cells by their labels: " + maps_agree(check),
    )
    show_chart(specs["maps"], alt=ChartName(
        "Attention maps, averaged over the heads, of the original, of the shuffled input, and the original "
        f"reordered, {len(labels)} queries by {len(labels)} keys each",
        f"In the original, largest weight {largest_weight(check.weights.mean(axis=0), labels, labels)}. The "
        f"shuffled and the reordered maps differ by at most {check.weights_diff:.1e}."))
    st.caption(f"Maps averaged over the {N_HEADS} heads, as `nn.MultiheadAttention` returns them by default; "
               "the difference below is the largest over every head separately.")
    st.metric("max |A(shuffled) − P A Pᵀ|, all heads", f"{check.weights_diff:.1e}")


def outputs_section(specs: dict[str, dict], check: PermutationCheck, add_pe: bool) -> None:
    """Section 3: the shuffled run's outputs moved back (Pᵀ) and compared with the original run's."""
    section(
        "3 · Outputs: undo the shuffle and compare",
        "Move each output row of the shuffled run back to where its word came from (Pᵀ) and compare with the "
        "original run. " + outputs_agree(check),
        r"\max\,\bigl|\operatorname{Attn}(X) - P^\top \operatorname{Attn}(PX)\bigr|"
        + (r"\quad\text{with } X \to X + PE" if add_pe else ""),
    )
    both = matrix_name("Output of the original and un-shuffled output of the shuffled input", check.output,
                       "tokens", "dimensions")
    show_chart(specs["outputs"], alt=ChartName(both.alt, f"The original's values {value_range(check.output)}; the "
                                                         f"two differ by at most {check.output_diff:.1e}."))
    st.metric("max |Attn(X) − Pᵀ Attn(PX)|", f"{check.output_diff:.1e}",
              help="Largest absolute difference over all tokens and dimensions (NumPy, float64).")
    if check.output_diff > ROUNDING:
        st.warning(f"With positional encoding the outputs differ by up to {check.output_diff:.2f}: "
                   "order now matters. Switch the toggle off to get the symmetry back.")
    elif add_pe:
        st.info(f"With positional encoding the difference is {check.output_diff:.1e}: this shuffle changes no word's "
                "input. Shuffle two different words to see order matter.")
    else:
        st.success(f"Without positional encoding the difference is {check.output_diff:.1e}, rounding noise: "
                   "self-attention is blind to order. Switch on positional encoding to break the symmetry.")


def torch_section(tokens: list[str], seed: int, perm: np.ndarray, add_pe: bool) -> None:
    """The lesson's own check, through torch.nn.MultiheadAttention."""
    section(
        "The lesson's check with torch.nn.MultiheadAttention",
        "The lesson permutes a batch with `x[:, perm, :]`, runs it through `nn.MultiheadAttention`, and undoes "
        "the shuffle with `out_unpermuted[:, perm, :] = out_permuted`. Here that exact code runs on this page's "
        "embeddings and weights (copied into the module, biases off), in **float32** as in the lesson, so the "
        "no-encoding difference is float32 noise (about 1e-7) rather than float64's 1e-16.",
    )
    torch_diff = torch_difference(tuple(tokens), seed, tuple(int(p) for p in perm), add_pe)
    st.metric("PyTorch: max |out − un-permuted out|" + (" (with PE)" if add_pe else ""), f"{torch_diff:.1e}")


def same_vector_quiz(check: PermutationCheck, add_pe: bool) -> None:
    """Without positional encoding: does a word's output vector change when the words are shuffled?"""
    with fixed_slot():
        if not add_pe:
            unchanged = check.output_diff < 1e-9
            predict_then_reveal(
                "Without positional encoding, shuffle the words. The output vector computed for a given word…",
                ["is the same vector, just in its new row", "changes"],
                "is the same vector, just in its new row" if unchanged else "changes",
                f"Moved back into the original order, the outputs differ by at most {check.output_diff:.1e}: "
                "floating-point noise. Attention alone only sees which words are there, not where. Switch on "
                "positional encoding to break it.",
                key="permutation_same",
            )


page_body()
