"""`pretrained.minilm`: our BERT forward pass matches Hugging Face `transformers` on all-MiniLM-L6-v2, layer by layer.

`transformers` is a development dependency: the reference here, never imported by the app.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

import core
from pretrained.minilm import (
    MiniLMConfig,
    encode,
    gelu,
    layer_norm,
    load_minilm,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
    tokenize,
)
from pretrained.model import model_path

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Tokenization works",
    "Café, naïve résumé — 3.14%! 東京 über-cool (don't) #tags",
    # 150 word-pieces: longer than the 128 that tokenizer.json asks to truncate and pad to.
    " ".join(["the quick brown fox jumps over the lazy dog"] * 15) + ".",
]


@pytest.fixture(scope="module")
def ours():
    return load_minilm(model_path())


@pytest.fixture(scope="module")
def reference():
    """Hugging Face's BertModel (eager attention, so it returns the weights) and its tokenizer, offline."""
    from transformers import AutoModel, AutoTokenizer

    path = str(model_path())
    model = AutoModel.from_pretrained(path, attn_implementation="eager", local_files_only=True).eval()
    return model, AutoTokenizer.from_pretrained(path, local_files_only=True)


@pytest.mark.parametrize("text", SENTENCES)
def test_tokens_match_transformers(ours, reference, text):
    _, hf_tokenizer = reference
    enc = hf_tokenizer(text)
    pieces = tokenize(text, ours)
    assert list(pieces.ids) == enc["input_ids"]
    assert list(pieces.tokens) == hf_tokenizer.convert_ids_to_tokens(enc["input_ids"])
    assert list(pieces.word_ids) == enc.word_ids()
    assert list(pieces.type_ids) == enc["token_type_ids"]


@pytest.mark.parametrize("text", SENTENCES)
def test_every_hidden_state_and_every_heads_weights_match_transformers(ours, reference, text):
    hf_model, hf_tokenizer = reference
    enc = hf_tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        expected = hf_model(**enc, output_attentions=True, output_hidden_states=True)
    pieces = tokenize(text, ours)
    got = encode(ours, torch.tensor([pieces.ids]), torch.tensor([pieces.type_ids]))
    t = len(pieces.ids)
    assert got.hidden_states.shape == (7, 1, t, 384) and got.weights.shape == (6, 1, 12, t, t)
    assert got.hidden_states.dtype == got.weights.dtype == torch.float32
    for layer, want in enumerate(expected.hidden_states):  # the embeddings, then each layer's output
        np.testing.assert_allclose(got.hidden_states[layer].numpy(), want.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"hidden state {layer}")
    for layer, want in enumerate(expected.attentions):  # (1, H, T, T) each
        np.testing.assert_allclose(got.weights[layer].numpy(), want.numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"attention weights of layer {layer}")


def test_a_batch_is_each_sentence_on_its_own(ours):
    a, b = tokenize("the cat sat", ours), tokenize("a dog ran", ours)
    assert len(a.ids) == len(b.ids)
    both = encode(ours, torch.tensor([a.ids, b.ids]))
    for i, pieces in enumerate((a, b)):
        alone = encode(ours, torch.tensor([pieces.ids]))
        np.testing.assert_allclose(both.weights[:, i], alone.weights[:, 0], atol=1e-6)
        np.testing.assert_allclose(both.hidden_states[:, i], alone.hidden_states[:, 0], atol=1e-5)


def test_the_same_input_gives_the_same_output(ours):
    ids = torch.tensor([tokenize(SENTENCES[0], ours).ids])
    torch.testing.assert_close(encode(ours, ids).weights, encode(ours, ids).weights, rtol=0, atol=0)


def test_attention_is_the_lessons_formula():
    """The PyTorch step equals `core.scaled_dot_product_attention` (NumPy) on the same inputs, in float64."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(2, 3, 5, 4)) for _ in range(3))  # (B, H, T, d_k)
    out, weights = scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)))
    want_out, want_weights = core.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(weights.numpy(), want_weights, atol=1e-12)
    np.testing.assert_allclose(out.numpy(), want_out, atol=1e-12)


def test_layer_norm_and_gelu_are_pytorchs():
    x = torch.randn(3, 7, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3 + 1
    gamma, beta = torch.linspace(0.5, 2.0, 16, dtype=torch.float64), torch.linspace(-1, 1, 16, dtype=torch.float64)
    torch.testing.assert_close(layer_norm(x, gamma, beta, 1e-12), F.layer_norm(x, (16,), gamma, beta, 1e-12))
    torch.testing.assert_close(gelu(x), F.gelu(x))  # the exact (erf) GELU, not the tanh approximation
    assert not torch.allclose(gelu(x), F.gelu(x, approximate="tanh"), atol=1e-6)


def test_split_and_merge_heads_match_core():
    x = np.arange(2 * 5 * 12, dtype=np.float64).reshape(2, 5, 12)  # (B, T, d_model)
    heads = split_heads(torch.from_numpy(x), 3)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads.numpy(), core.split_heads(x, 3))
    np.testing.assert_array_equal(merge_heads(heads).numpy(), x)


def test_config_is_read_from_config_json():
    cfg = MiniLMConfig.from_json(model_path() / "config.json")
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_k, cfg.d_ff) == (6, 12, 384, 32, 1536)
    assert (cfg.vocab_size, cfg.max_positions, cfg.type_vocab_size, cfg.layer_norm_eps) == (30522, 512, 2, 1e-12)
    with pytest.raises(AttributeError):
        cfg.n_heads = 4  # frozen


@pytest.mark.parametrize(
    ("change", "message"),
    [({"hidden_act": "relu"}, "hidden_act is 'relu'"), ({"model_type": "gpt2"}, "model_type is 'gpt2'"),
     ({"num_attention_heads": 5}, "not divisible by num_attention_heads=5"),
     ({"hidden_size": None}, "lacks the key 'hidden_size'")],
)
def test_config_refuses_what_the_forward_pass_does_not_implement(tmp_path, change, message):
    cfg = json.loads((model_path() / "config.json").read_text())
    cfg.update(change)
    cfg = {k: v for k, v in cfg.items() if v is not None}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=message):
        MiniLMConfig.from_json(tmp_path / "config.json")


def test_a_missing_tensor_is_named(tmp_path):
    shutil.copy(model_path() / "config.json", tmp_path)
    save_file({"embeddings.LayerNorm.weight": torch.ones(384)}, tmp_path / "model.safetensors")
    with pytest.raises(ValueError, match="has no tensor 'embeddings.word_embeddings.weight'"):
        load_minilm(tmp_path)


def test_weights_are_memory_mapped_from_the_file(ours):
    """The 47 MB embedding table is not copied into memory: its bytes live in a mapping of model.safetensors."""
    target = str((model_path() / "model.safetensors").resolve())
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == target:
            lo, hi = (int(a, 16) for a in fields[0].split("-"))
            ranges.append((lo, hi))
    for tensor in (ours.embeddings.word, ours.layers[5].W_2):
        ptr = tensor.data_ptr()
        assert any(lo <= ptr < hi for lo, hi in ranges), "the tensor was copied out of the file"


def test_the_tokenizer_neither_pads_nor_truncates(ours):
    """tokenizer.json asks for padding and truncation to 128 tokens (a training setting); we must see the real text."""
    assert len(tokenize("hello", ours).ids) == 3
    assert len(tokenize("a " * 300, ours).ids) == 302


def test_encode_rejects_bad_input(ours):
    with pytest.raises(ValueError, match=r"\(B, T\) integer tensor"):
        encode(ours, torch.tensor([101, 102]))
    with pytest.raises(ValueError, match=r"ids must lie in 0..30521"):
        encode(ours, torch.tensor([[101, 30522, 102]]))
    with pytest.raises(ValueError, match="513 tokens; the model has positions for 512"):
        encode(ours, torch.full((1, 513), 1000))
    with pytest.raises(ValueError, match="type_ids must lie in 0..1"):
        encode(ours, torch.tensor([[101, 102]]), torch.tensor([[0, 2]]))


def test_importing_core_minilm_does_not_import_transformers():
    code = ("import sys, pretrained.minilm; "
            "print([m for m in ('transformers', 'huggingface_hub', 'scipy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported: {done.stdout}"
