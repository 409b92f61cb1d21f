"""A decoder that writes: a small decoder-only Transformer, trained here, picks the next word one at a time."""

from __future__ import annotations

import dataclasses

import numpy as np
import streamlit as st

from core.embeddings import tokenize
from decoder.baselines import Predictor, Quality, grammar_predictor, quality
from decoder.config import CONTEXT, DecoderConfig
from decoder.cost import pass_multiply_adds, step_costs
from decoder.language import ADJECTIVES, ANIMALS, PLACES, SPECIES, all_sentences, split
from decoder.model import Decoder, build_decoder, causal_mask
from decoder.sampling import Sampling, draw_for, next_word, options_around, top_p_cut
from decoder.trainer import DecoderRun, DecoderTrainer
from decoder.writing import (
    MAX_PROMPT,
    WORDS,
    Written,
    every_way,
    inference_model,
    median_seconds,
    prompt_ids,
    text_pass,
    write,
)
from training.model import KeyValueCache, MultiHeadSelfAttention, parameter_count
from ui.cache import shared_cache
from ui.chart_names import ChartName
from ui.charts import decoder as charts
from ui.charts.template import part_spec
from ui.display import show_chart
from ui.layout import (controls_row, fixed_slot, introduction, page_fragment, section, show_source, static_table,
                       whole_block_link)
from ui.quiz import predict_then_reveal
from ui.shared_runs import SharedRuns, shared_runs
from ui.take_home import offer_notebook
from ui.url_state import bound_select_slider, bound_slider, seed_slider, tokens_input
from ui.wording import decoder as wording
from ui.work_line import LINE

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"layers": "2", "heads": "4"}

#: Every session's runs, one per setting: a class trains each setting once.
RUNS: SharedRuns[DecoderTrainer] = shared_runs("decoder", DecoderTrainer, keep=8)
CHUNK_S = 0.25  # training runs in chunks of this much time, the progress drawn between them
STEPS = [100, 200, 300, 500, 800, 1200]
TEMPERATURES = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0]
TOP_PS = [round(p, 2) for p in np.arange(0.05, 1.0001, 0.05)]
DEFAULT_PROMPT = "the cat"
WORDS_KEY = "words"  # how many words have been written after the prompt (in the URL)


@shared_cache(16)
def corpus_summary(held_out_share: float, seed: int) -> tuple[int, int, tuple[str, ...]]:
    """``(sentences to train on, held-out sentences, a few held-out sentences)`` of a split."""
    corpus = split(held_out_share, seed)
    return len(corpus.train), len(corpus.held_out), tuple(" ".join(s) for s in corpus.held_out_sentences[:4])


@shared_cache(16)
def n_parameters(architecture: tuple[int, int, int, int, int, str], _config: DecoderConfig) -> int:
    """Trainable numbers of `_config`'s decoder, counted once per `architecture` (not per seed or step count)."""
    return parameter_count(build_decoder(_config))


@shared_cache(8)
def trained_model(config: DecoderConfig, _run: DecoderRun) -> Decoder:
    """The finished run's decoder in float64, built once per setting for every session."""
    return inference_model(config, _run.state)


@shared_cache(1)
def language_grammar() -> Predictor:
    """The grammar's next-word probabilities: one language, so one table for every setting and session."""
    return grammar_predictor()


@shared_cache(8)
def model_quality(config: DecoderConfig, _model: Decoder) -> Quality:
    return quality(_model, split(config.held_out_share, config.seed), language_grammar())


@shared_cache(256)
def written(config: DecoderConfig, prompt: tuple[str, ...], sampling: Sampling, draw_seed: int, n_words: int,
            _model: Decoder) -> Written:
    """The text written from `prompt` at these settings, computed once per input for every session."""
    return write(_model, prompt_ids(prompt), sampling, draw_seed, n_words)


@shared_cache(256)
def next_word_spec(config: DecoderConfig, prompt: tuple[str, ...], sampling: Sampling, draw_seed: int,
                   n_words: int, _text: Written) -> dict:
    step = _text.pending
    order = np.argsort(-step.probs, kind="stable")[: charts.TOP_WORDS]
    return part_spec(charts.next_word_part(
        [WORDS[i] for i in order], step.logits[order], step.scaled[order], step.probs[order], step.final[order],
        charts.word_status(step.cut_by_k, step.cut_by_p)[order]))


@shared_cache(64)
def text_spec(config: DecoderConfig, ids: tuple[int, ...],
              _model: Decoder) -> tuple[dict, np.ndarray, np.ndarray]:
    """One masked pass over the text: the attention chart, the maps ``(L, H, T, T)`` and the logits ``(T, V)``."""
    logits, maps = text_pass(_model, ids)
    return charts.attention_spec(maps, [WORDS[i] for i in ids]), maps, logits


introduction(
    "A decoder that writes",
    "The lesson ends with this: a modern language model is a **decoder-only Transformer**, the masked "
    "self-attention stack alone, trained to predict the next word. Here is one, small enough to train in "
    "seconds on this server and to show every number. It learns a made-up language, then writes: it turns its "
    "scores for every word (the **logits** z, one number per word of the vocabulary) into probabilities, draws one "
    "word, appends it, and starts again. The softmax is the model's; the temperature τ is the writer's choice, "
    "the same τ as on the soft-lookup page: it divides the logits before the softmax, and τ = 1 draws from the "
    "model's own probabilities. Read *Masked self-attention* first: this decoder is a stack of it.",
    r"p(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}(z_t),\qquad "
    r"z_t = h_t W_{out},\qquad h_t = \operatorname{Decoder}(x_0, \dots, x_t);\qquad "
    r"\text{drawn from } p_\tau = \operatorname{softmax}\!\left(\frac{z_t}{\tau}\right)",
)


def language_section() -> None:
    """Section 1: the language the decoder learns, how it is made and how it is split."""
    n_train, n_held, examples = corpus_summary(DecoderConfig.held_out_share, 0)
    section(
        "1 · The language",
        f"Every sentence is made by a small grammar: an animal ({', '.join(ANIMALS)}), optionally "
        f"{' or '.join(ADJECTIVES)}, sits on, runs near or chases something ({', '.join(PLACES)}, another animal). "
        "Two rules need context, not just the previous word: a plural animal takes *they*, *sleep*, *run*, a "
        "singular one *it*, *sleeps*, *runs*; and *it* or *they* always means the first animal, whose own sound "
        f"follows ({', '.join(f'{a} → {s}' for a, s in SPECIES.items())}). The grammar makes "
        f"{len(all_sentences()):,} sentences; each setting's seed deals {n_held} of them aside (held out, never "
        f"trained on) and trains on the other {n_train}.",
    )
    st.caption(f"The vocabulary, {len(WORDS)} words (“.” ends a sentence): " + " · ".join(WORDS))
    st.caption("Held out at seed 0, for example: " + " / ".join(f"“{s}”" for s in examples))


def model_controls() -> DecoderConfig:
    with controls_row():
        n_layers = int(bound_select_slider("Layers", "layers", [1, 2], 2, help="Masked attention + MLP blocks."))
        n_heads = int(bound_select_slider("Heads H", "heads", [1, 2, 4], 2, help="Attention heads per layer; "
                                          f"d_model = {DecoderConfig.d_model}, so d_k = {DecoderConfig.d_model} / H."))
        steps = int(bound_select_slider("Training steps", "steps", STEPS, DecoderConfig.steps,
                                        help=f"Adam steps, each on {DecoderConfig.batch} training sentences drawn "
                                        "at random."))
        seed = seed_slider(lesson_seed=False)
    config = DecoderConfig(n_layers=n_layers, n_heads=n_heads, steps=steps, seed=seed)
    st.caption(wording.model_size(config, n_parameters(config.architecture, config)))
    whole_block_link("Each of its layers is the whole Transformer block, pre-LN, with ReLU and d_ff = 4 · d_model, "
                     "its attention under a causal mask.")
    return config


def train_section(config: DecoderConfig) -> DecoderRun | None:
    """Section 2: train (or find) the shared run of `config`; its curves and what it reached."""
    section("2 · Training", "Each step shows the decoder whole training sentences. Masked self-attention lets "
            "every position see only itself and the words before it, so one pass scores its guess of every next "
            "word at once.",
            r"\mathcal{L} = -\frac{1}{N}\sum_{t} \log p(x_{t+1} \mid x_{\le t})")
    trainer = RUNS.existing(config)
    done = trainer is not None and trainer.result.complete
    if st.button("Trained" if done else "Train", key="train", type="primary", disabled=done,
                 icon=":material/model_training:",
                 help="Train this setting once for the whole server: everyone who asks for it shares the run."):
        trainer = train_live(config)
    if trainer is None or not trainer.result.complete:
        st.info("Not trained yet at these settings: press **Train** (a few seconds). Once trained, a setting is "
                "ready for every student on this server.", icon=":material/play_arrow:")
        return None
    run = trainer.result
    model = trained_model(config, run)
    quality_metrics(run, model_quality(config, model), config)
    return run


def train_live(config: DecoderConfig) -> DecoderTrainer:
    """Train `config`'s shared run to the end, after waiting in the process's line for a slot if need be."""
    bar = st.progress(0.0, text="building the decoder…")
    started = RUNS.existing(config)
    done = 0 if started is None else started.result.steps_done
    with LINE.place(("decoder", config), "decoder step", config.steps, done) as place:
        for _ in place.chunks(lambda standing: bar.progress(done / config.steps, text=standing.sentence())):
            trainer = RUNS.advance(config, CHUNK_S)
            r = trainer.result
            place.progress(r.steps_done)
            bar.progress(r.steps_done / config.steps, text=f"step {r.steps_done} / {config.steps} · batch loss "
                         f"{r.train_loss[-1]:.3f} · {r.elapsed_s:.1f} s")
            if r.complete:
                break
    bar.empty()
    return trainer


def quality_metrics(run: DecoderRun, q: Quality, config: DecoderConfig) -> None:
    steps = np.asarray(run.checkpoint_steps)
    held = np.array([s.loss for s in run.held_out])
    train_steps, train = run.windowed_train_loss(max(1, config.steps // 25))
    show_chart(part_spec(charts.loss_curves_part(steps, held, train_steps, train, q.bigram.loss, q.grammar.loss)),
               alt=ChartName(f"Line chart of the next-word loss over {config.steps} training steps, with the "
                             "bigram's and the grammar's loss as dashed rules", wording.final_losses(run, q)))
    with st.container(horizontal=True):
        for label, value, explained in wording.quality_metrics(q, run.elapsed_s, run.cpu_s):
            st.metric(label, value, border=True, help=explained)
    st.caption(wording.perplexity(q))


def sampling_controls() -> tuple[Sampling, int]:
    with controls_row():
        tau = float(bound_select_slider("Temperature τ", "temp", TEMPERATURES, 1.0, format_func=lambda tau: f"{tau:g}",
                                        help="Divides the logits before the softmax: near 0 the likeliest word "
                                             "takes everything (0 is exactly greedy), large τ flattens."))
        top_k = int(bound_slider("Top-k", "top_k", 0, 10, 0,
                                 help="Keep only the k likeliest words (0 keeps all)."))
        top_p = float(bound_select_slider("Top-p", "top_p", TOP_PS, 1.0, format_func=lambda p: f"{p:g}",
                                          help="Keep the fewest likeliest words whose probabilities add up to p "
                                               "(the nucleus; 1 keeps all)."))
        draw_seed = int(bound_slider("Sampling seed", "draw", 0, 99, 0,
                                     help="Seeds the random draws: the same seed and settings write the same text."))
    return Sampling(tau, top_k, top_p), draw_seed


def lower_case(words: list[str]) -> list[str]:
    return [w.lower() for w in words]


def read_prompt() -> tuple[str, ...]:
    """The prompt, lower-cased; a prompt the decoder cannot read shows why and keeps the last good one (`tokens_input`
    keeps it, checked by `prompt_ids` too)."""
    with fixed_slot():
        words = tokens_input("Prompt", "prompt", DEFAULT_PROMPT, max_tokens=MAX_PROMPT,
                             validate=lambda typed: prompt_ids(lower_case(typed)),
                             help=f"Words of the language, at most {MAX_PROMPT}, e.g. “the dogs”.")
    return tuple(lower_case(words))


def set_words(n: int) -> None:
    st.session_state[WORDS_KEY] = n


def writing_controls(to_end: int) -> int:
    """The number of words written, 0 to `to_end` (where the text ends at these settings), and the buttons that
    change it one word at a time or to the end."""
    if to_end == 0:
        st.caption("The prompt already ends the sentence: nothing is written after “.”.")
        return 0
    now = min(int(st.session_state.get(WORDS_KEY, 0)), to_end)
    with st.container(horizontal=True):
        st.button("Next word", key="next_word", icon=":material/add:", on_click=set_words, args=(now + 1,),
                  disabled=now >= to_end, help="Append the word drawn from the probabilities below.")
        st.button("Write to the end", key="write_all", icon=":material/fast_forward:", on_click=set_words,
                  args=(to_end,), disabled=now >= to_end, help="Keep drawing until “.” or the last position.")
        st.button("Start over", key="start_over", icon=":material/restart_alt:", on_click=set_words, args=(0,),
                  disabled=now == 0, help="Back to the prompt alone.")
    return int(bound_slider("Words written after the prompt", WORDS_KEY, 0, to_end, 0,
                            help=f"At these settings the text ends after {to_end} words."))


def writing_section(config: DecoderConfig, model: Decoder) -> tuple[Written, tuple[str, ...], Sampling, int]:
    """Section 3: the prompt, the sampling knobs, the text written so far and the next word's probabilities."""
    section("3 · Writing, one word at a time",
            "The decoder's logits z are divided by the temperature, turned into probabilities by the softmax, "
            "cut by top-k (only the k likeliest words are kept) and top-p (only the **nucleus** is kept: the fewest "
            "likeliest words whose probabilities add up to at least p), renormalised, and one word is drawn. "
            "The bars: each likely word's probability after the temperature, and beside it the probability it "
            "is drawn with. Hover a bar for its arithmetic.",
            r"p_\tau = \operatorname{softmax}(z/\tau),\qquad q(w) = \frac{p_\tau(w)\,[w\ \text{kept}]}"
            r"{\sum_{v\ \text{kept}} p_\tau(v)}")
    prompt = read_prompt()
    sampling, draw_seed = sampling_controls()
    whole = written(config, prompt, sampling, draw_seed, CONTEXT - len(prompt), model)
    n_words = writing_controls(len(whole.ids) - len(prompt))
    text = whole.prefix(n_words)
    words = text.words
    shown = " ".join(f"**{w}**" if i >= text.n_prompt else w for i, w in enumerate(words))
    st.markdown(f"Text: {shown}" + (" — *the end*" if text.ended else " …"))
    with fixed_slot():
        if text.ended and not text.steps:  # the prompt ended it (`writing_controls` says so)
            st.caption("Take the final “.” off the prompt and the decoder writes on from there.")
        elif text.ended:
            st.caption("The text has ended: the decoder wrote “.” or filled its " f"{CONTEXT} positions. "
                       "Start over, or change the temperature, top-k, top-p or seed to write another.")
        else:
            next_word_chart(config, prompt, sampling, draw_seed, n_words, text)
    return text, prompt, sampling, draw_seed


def next_word_chart(config: DecoderConfig, prompt: tuple[str, ...], sampling: Sampling, draw_seed: int,
                    n_words: int, text: Written) -> None:
    step = text.pending
    show_chart(next_word_spec(config, prompt, sampling, draw_seed, n_words, text),
               alt=ChartName(f"Bar chart of the {charts.TOP_WORDS} likeliest next words' probabilities",
                             wording.likeliest_and_drawn(step)))
    st.caption(wording.word_drawn(step, sampling))


def attention_section(config: DecoderConfig, model: Decoder, text: Written) -> None:
    """Section 4: the attention of every word of the text, and the three ways of computing its logits agree."""
    section("4 · Where each word looked",
            "Row t is the position that chose word t + 1; its weights cover the words up to it, itself included, "
            "and none after (the mask). Computed in one masked pass over the whole text, they equal what each "
            "step saw while writing.")
    spec, maps, logits = text_spec(config, text.ids, model)
    n = len(text.ids)
    show_chart(spec, alt=ChartName(f"Attention maps of every layer and head over the text's {n} words",
                                   wording.where_the_last_word_looks(maps, text.ids)))
    above = float(np.abs(np.triu(maps, k=1)).max()) if n > 1 else 0.0
    c1, c2 = st.columns(2)
    c1.metric("max weight on a later word", f"{above:.1f}", help="Exactly 0: the mask hides the future.")
    label = "max |one pass − while writing|"
    if not text.steps:  # the prompt ended the sentence: no step chose a word
        c2.metric(label, "—", help="Nothing was written after the prompt, so no step's logits to compare.")
        return
    first = text.n_prompt - 1  # the position whose logits chose the first written word
    while_writing = np.stack([step.logits for step in text.steps])  # (steps, V - 1), from the cached steps
    in_one_pass = logits[first : first + len(text.steps), : while_writing.shape[1]]
    c2.metric(label, f"{np.abs(in_one_pass - while_writing).max():.1e}",
              help="The logits of the whole text in one masked pass (as in training) against those each step "
                   "computed while writing, one word at a time with the cache: float64 rounding only.")


def cache_section(config: DecoderConfig, model: Decoder, text: Written) -> None:
    """Section 5: the key-value cache: rows reused and computed per step, the work counted and timed."""
    section("5 · The key-value cache",
            "A word's key and value never change once it is read (nothing after it can reach it), so writing "
            "keeps them: each step computes the newest word's row of K and V and reuses every earlier one. "
            "Without the cache every step reads the whole text again.")
    if not text.steps:
        st.caption(f"The prompt already ends the sentence, so nothing was written: its {text.n_prompt} "
                   f"{'word was' if text.n_prompt == 1 else 'words were'} read in one pass and no step reused "
                   "the cache. Change the prompt to see it at work.")
        return
    costs = step_costs(config, text.n_prompt, len(text.ids))
    static_table({
        "step (words read)": [c.keys for c in costs],
        "K, V rows computed": [c.computed for c in costs],
        "K, V rows reused": [c.reused for c in costs],
        "multiply-adds with cache": [c.with_cache for c in costs],
        "without cache": [c.without_cache for c in costs],
    }, {"multiply-adds with cache": "{:,}", "without cache": "{:,}"})
    st.caption(wording.cache_totals(costs))
    if st.button("Measure both on this server", key="measure_cache", icon=":material/timer:",
                 help="Writes this text's logits both ways, five times each, and reports the median."):
        timings = {way: median_seconds(model, text.ids, way) for way in ("cached", "recomputed")}
        st.caption(wording.cache_timings(timings, every_way(model, text.ids), len(text.ids)))


def next_word_quiz(prompt: tuple[str, ...], text: Written, draw_seed: int) -> None:
    """At temperature 0.1, which word follows the prompt? Computed from the decoder's logits after the prompt."""
    first = text.steps[0] if text.steps else None  # the step after the prompt (none if the prompt ended it)
    cold = None if first is None else next_word(first.logits, Sampling(0.1), draw_for(draw_seed, len(prompt)))
    with fixed_slot():
        if cold is not None:
            options = sorted(WORDS[i] for i in options_around(cold.probs, cold.choice, 4))  # hold the word drawn
            predict_then_reveal(f"At temperature 0.1, which word does the decoder write after “{' '.join(prompt)}”?",
                                options, WORDS[cold.choice], wording.cold_answer(cold), key="decoder_next")


@page_fragment
def page_body() -> None:
    language_section()
    show_source(causal_mask, MultiHeadSelfAttention, KeyValueCache, Decoder.forward, next_word, top_p_cut, write,
                pass_multiply_adds, title="Show the decoder, the cache and the sampling")
    config = model_controls()
    run = train_section(config)
    if run is None:  # the notebook trains it, then writes at the writing section's defaults
        offer_run_notebook(config, DEFAULT_PROMPT.split(), Sampling(), 0, 0)
        return
    writing(config, trained_model(config, run))


def offer_run_notebook(config: DecoderConfig, prompt: tuple[str, ...] | list[str], sampling: Sampling,
                       draw_seed: int, n_words: int, rejected: str = "") -> None:
    """The run as a notebook that trains it again and writes `n_words` words after `prompt` as the page does
    (`rejected`: why the prompt typed was refused, the notebook then saying it writes after the last valid one)."""
    offer_notebook("decoder", rejected=rejected, **dataclasses.asdict(config), prompt=list(prompt),
                   temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p,
                   draw_seed=draw_seed, n_words=n_words)


@page_fragment
def writing(config: DecoderConfig, model: Decoder) -> None:
    """Sections 3 to 5 and the quiz, a fragment nested in the page's: a sampling knob or a click on Next word
    changes nothing above it, so it reruns only this part."""
    text, prompt, sampling, draw_seed = writing_section(config, model)
    typed = lower_case(tokenize(str(st.session_state.get("prompt", " ".join(prompt)))))
    offer_run_notebook(config, prompt, sampling, draw_seed, len(text.ids) - text.n_prompt,
                       rejected="" if tuple(typed) == tuple(prompt) else "the prompt typed could not be read")
    attention_section(config, model, text)
    cache_section(config, model, text)
    next_word_quiz(prompt, text, draw_seed)


page_body()
