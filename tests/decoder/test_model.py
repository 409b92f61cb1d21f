"""The decoder is causal to the last bit, writes the same with and without its cache, and its work is counted."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from decoder.config import CONTEXT, DecoderConfig
from decoder.cost import pass_multiply_adds, step_costs
from decoder.language import END_ID, PAD_ID, TOKEN_ID
from decoder.model import build_decoder, causal_mask
from decoder.sampling import Sampling
from decoder.trainer import DecoderTrainer, score
from decoder.writing import PromptError, every_way, inference_model, prompt_ids, text_pass, write
from tests.helpers.torch_ops import OutputShapes

CONFIG = DecoderConfig(steps=60, n_heads=4)
TEXT = prompt_ids("the small cats chased the dog and then they".split())


@pytest.fixture(scope="module")
def model():
    return inference_model(CONFIG, DecoderTrainer(CONFIG).run().state)


def test_the_causal_mask_lets_each_position_read_itself_and_the_past():
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    assert torch.equal(causal_mask(1, 2), torch.ones(1, 3, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_later_word_never_changes_an_earlier_logit_to_the_last_bit(model, dtype):
    m = model.to(dtype)
    x = torch.tensor([TEXT])
    changed = x.clone()
    changed[0, 6:] = TOKEN_ID["mat"]
    with torch.no_grad():
        a, maps = m(x)
        b, _ = m(changed)
    assert torch.equal(a[0, :6], b[0, :6])
    assert not torch.equal(a[0, 6:], b[0, 6:])
    assert torch.all(torch.triu(maps[0], diagonal=1) == 0)
    model.double()


def test_the_whole_masked_text_gives_the_logits_of_writing_one_word_at_a_time(model):
    ways = every_way(model, TEXT)
    assert np.abs(ways["cached"] - ways["whole"]).max() <= 1e-12
    assert np.abs(ways["recomputed"] - ways["whole"]).max() <= 1e-12


def test_writing_with_the_cache_equals_writing_without_it(model):
    text = write(model, prompt_ids(["the", "dog"]), Sampling(1.5), 3, CONTEXT)
    recomputed = every_way(model, text.ids, only="recomputed")["recomputed"]  # (T, V): no cache, prefix by prefix
    for t, step in enumerate(text.steps):
        assert np.abs(step.logits - recomputed[text.n_prompt - 1 + t, :-1]).max() <= 1e-6
    assert text.ended and (text.ids[-1] == END_ID or len(text.ids) == CONTEXT)


def test_a_step_attends_over_what_a_masked_pass_shows(model):
    text = write(model, prompt_ids(["the", "cats"]), Sampling(0.0), 0, 4)
    maps = text_pass(model, text.ids)[1]  # (L, H, T, T)
    for t, weights in enumerate(text.attention[: len(text.ids) - text.n_prompt]):
        row = text.n_prompt - 1 + t
        assert np.allclose(weights, maps[:, :, row, : row + 1], atol=1e-12)


def test_greedy_writing_is_the_argmax_at_every_step_and_a_link_writes_the_same(model):
    text = write(model, prompt_ids(["the", "bird"]), Sampling(0.0), 0, CONTEXT)
    whole = every_way(model, text.ids, only="whole")["whole"]
    for t in range(text.n_prompt, len(text.ids)):
        assert text.ids[t] == int(np.argmax(whole[t - 1, :-1]))
    again = [write(model, prompt_ids(["the", "bird"]), Sampling(0.7, 5, 0.9), 11, CONTEXT) for _ in range(2)]
    assert again[0].ids == again[1].ids
    assert all(np.array_equal(a.final, b.final) for a, b in zip(again[0].steps, again[1].steps, strict=True))


@pytest.mark.parametrize(("n_read", "n_keys"), [(5, 5), (1, 5), (3, 3)])
def test_multiply_adds_are_pytorchs_own_count(model, n_read, n_keys):
    m = build_decoder(CONFIG)
    x = torch.tensor([TEXT[:n_keys]])
    caches = m.new_caches()
    if n_keys > n_read:
        m(x[:, : n_keys - n_read], caches)
    with FlopCounterMode(display=False) as counter:
        m(x[:, n_keys - n_read :], caches)
    assert counter.get_total_flops() == 2 * pass_multiply_adds(CONFIG, n_read, n_keys)


def test_the_cache_reads_each_word_once():
    costs = step_costs(CONFIG, 2, 6)
    assert [(c.keys, c.computed, c.reused) for c in costs] == [(2, 2, 0), (3, 1, 2), (4, 1, 3), (5, 1, 4), (6, 1, 5)]
    assert all(c.with_cache <= c.without_cache for c in costs)


@pytest.mark.parametrize(("words", "message"), [
    ([], "empty"), (["the", "zebra"], "“zebra”.*vocabulary: the small big cat"),
    (["the"] * CONTEXT, "at most 14 words"),
])
def test_a_prompt_the_decoder_cannot_read_says_why(words, message):
    with pytest.raises(PromptError, match=message):
        prompt_ids(words)


def test_a_prefix_of_a_text_is_the_text_written_with_fewer_words(model):
    whole = write(model, prompt_ids(["the", "dogs"]), Sampling(1.2, 6, 0.95), 4, CONTEXT)
    for n in range(len(whole.ids) - whole.n_prompt + 2):
        short, cut = write(model, prompt_ids(["the", "dogs"]), Sampling(1.2, 6, 0.95), 4, n), whole.prefix(n)
        assert short.ids == cut.ids and short.ended == cut.ended and len(short.steps) == len(cut.steps)
        assert all(np.array_equal(a.final, b.final) and a.choice == b.choice
                   for a, b in zip(short.steps, cut.steps, strict=True))


def test_the_pass_without_weights_gives_the_same_logits_whole_and_cached():
    """Training's and scoring's pass (no weights kept) is the masked pass: its logits, whole or read through the
    cache, are the explicit pass's, and it returns no weights."""
    m, x = build_decoder(CONFIG), torch.tensor([TEXT])
    with torch.no_grad():
        explicit, maps = m(x)
        fused, none = m(x, need_weights=False)
        caches = m.new_caches()
        cached = torch.cat([m(x[:, :4], caches, need_weights=False)[0], m(x[:, 4:], caches, need_weights=False)[0]],
                           dim=1)  # (1, 4, V) and (1, T - 4, V) -> (1, T, V)
    assert none is None and maps.shape == (1, CONFIG.n_layers, CONFIG.n_heads, len(TEXT), len(TEXT))
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cached, explicit, atol=1e-5, rtol=1e-5)


def test_a_training_step_and_a_held_out_score_never_make_the_attention_weights():
    """The weights ``(B, H, T, T)`` are for drawing: a training step (forward and backward) and the held-out score
    take the fused attention, which never makes them."""
    trainer = DecoderTrainer(DecoderConfig(steps=2, n_checkpoints=1))
    T = trainer.train_ids.shape[1] - 1  # the positions read: every word of a sentence but its last
    with OutputShapes() as seen:
        trainer.step()
        score(trainer.model, trainer.corpus.held_out)
    assert len(seen.shapes) > 100
    assert seen.square_maps(T) == []


def test_reading_only_the_words_gives_the_whole_pass_s_logits_at_the_words(model):
    """With `lengths`, the decoder reads each row's first positions alone: their logits are the whole pass's, and
    the padding after them, whatever it holds, changes none of them to the last bit."""
    x = torch.randint(0, END_ID + 1, (6, CONTEXT - 1), generator=torch.Generator().manual_seed(3))
    lengths = torch.tensor([CONTEXT - 1, 1, 7, 3, 10, 5])
    words = torch.arange(CONTEXT - 1) < lengths[:, None]  # (6, T)
    changed = x.masked_fill(~words, TOKEN_ID["mat"])
    with torch.no_grad():
        whole, _ = model(x, need_weights=False)  # (6, T, V)
        read, none = model(x, need_weights=False, lengths=lengths)  # (N, V)
        read_changed, _ = model(changed, need_weights=False, lengths=lengths)
    assert none is None and read.shape == (int(lengths.sum()), whole.shape[-1])
    torch.testing.assert_close(read, whole[words], atol=1e-5, rtol=1e-5)
    assert torch.equal(read_changed, read)


def test_a_training_step_and_a_held_out_score_read_no_padding():
    """The layers that work position by position (the norms, the MLP, the readout) see as many positions as the
    batch, or the held-out set, has next words: never its padding."""
    trainer = DecoderTrainer(DecoderConfig(steps=2, n_checkpoints=1))
    m, seen = trainer.model, []
    for layer in (m.ln_f, m.out, *(part for block in m.blocks for part in (block.ln1, block.ln2, block.mlp))):
        layer.register_forward_hook(lambda _layer, args, _out: seen.append(args[0].shape[:-1].numel()))
    rows = torch.randint(len(trainer.train_ids), (trainer.config.batch,),
                         generator=torch.Generator().set_state(trainer.generator.get_state()))  # the step's draw
    batch, held_out = trainer.train_ids[rows], torch.as_tensor(trainer.corpus.held_out)
    next_words = [int((ids[:, 1:] != PAD_ID).sum()) for ids in (batch, held_out)]
    assert all(n < ids[:, 1:].numel() for n, ids in zip(next_words, (batch, held_out), strict=True))
    trainer.step()
    assert set(seen) == {next_words[0]}
    seen.clear()
    score(trainer.model, trainer.corpus.held_out)
    assert set(seen) == {next_words[1]}
