"""The whole-block page's notebook, downloaded at real links and run: every stage of `core.transformer_block`'s
block, `core.deep_stack`'s per-depth figures and gradient, the FFN's per-position check, and PyTorch's
TransformerEncoderLayer as `core.block_reference` runs it."""

from __future__ import annotations

import numpy as np
import pytest

from core.block_reference import torch_block_outputs
from core.deep_stack import StackConfig, depth_sweep
from core.transformer_block import block_input, block_weights, ffn_permutation_check, transformer_block
from notebooks import settings_of
from notebooks.values import NotWritableError
from tests.helpers.notebooks import assert_close, notebook_from_page, run_notebook

PAGE = "app_pages/transformer_block.py"
DEFAULTS = {"seed": "0", "d_model": "4", "heads": "1", "act": "ReLU", "ln": "post-LN (the paper)", "layers": "24",
            "residual": "true", "norm": "true", "perm": "2,0,1"}
LINKS = [{},
         {"seed": "7", "d_model": "8", "heads": "2", "d_ff": "64", "act": "GELU", "ln": "pre-LN (GPT-2)",
          "layers": "5", "residual": "false", "norm": "false", "perm": "1,2,0"},
         {"seed": "1", "d_model": "12", "heads": "3", "d_ff": "24", "residual": "false", "layers": "24",
          "perm": "0,2,1"}]
#: The notebook's names of the block's stages, and where `BlockSteps` keeps each.
STAGES = {"attention_weights": "attention.weights", "concat": "attention.concat",
          "attention_output": "attention.output", "residual_1": "residual_1", "mean_1": "norm_1.mean",
          "var_1": "norm_1.var", "normalised_1": "norm_1.normalised", "norm_1": "norm_1.output",
          "pre_activation": "ffn.pre_activation", "hidden": "ffn.hidden", "ffn_output": "ffn.output",
          "residual_2": "residual_2", "mean_2": "norm_2.mean", "var_2": "norm_2.var",
          "normalised_2": "norm_2.normalised", "norm_2": "norm_2.output", "output": "output"}
SWEEP = ["stream", "update", "self_cosine", "token_cosine", "grad_norm"]
WEIGHTS = ["W_q", "W_k", "W_v", "W_o", "W_1", "b_1", "W_2", "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2"]


def attribute(obj: object, path: str) -> object:
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


@pytest.mark.parametrize("link", LINKS, ids=["defaults", "pre-LN, GELU, d_model 8, no residual or norm, 5 layers",
                                             "d_model 12, 3 heads, residual off at 24 layers"])
def test_the_notebook_recomputes_the_view(kernel, link):
    name, text = notebook_from_page(PAGE, **link)
    assert name == "transformer_block.ipynb"
    found = run_notebook(text, kernel, ["X", *WEIGHTS, *STAGES, *SWEEP, "ffn_of_shuffled", "shuffled_ffn",
                                        "torch_output", "torch_causal_output"])
    view = {**DEFAULTS, **link}
    seed, d_model, n_heads = int(view["seed"]), int(view["d_model"]), int(view["heads"])
    d_ff = int(view.get("d_ff", 4 * d_model))
    act, placement = view["act"].lower(), "pre" if view["ln"].startswith("pre") else "post"
    x, weights = block_input(d_model), block_weights(seed, d_model, d_ff)
    block = transformer_block(x, weights, n_heads, activation=act, placement=placement)
    assert_close(found, {"X": x, **{n: getattr(weights, n) for n in WEIGHTS}})
    assert_close(found, {n: attribute(block, path) for n, path in STAGES.items()})
    sweep = depth_sweep(block_input(4), StackConfig(int(view["layers"]), 1, 16, act, placement,
                                                    view["residual"] == "true", view["norm"] == "true", 0))
    assert_close(found, {n: getattr(sweep, n) for n in SWEEP})
    np.testing.assert_allclose(found["grad_norm"], sweep.grad_norm, rtol=1e-6)  # also where it is below 1e-6
    perm = tuple(int(i) for i in view["perm"].split(","))
    check = ffn_permutation_check(x, weights, perm, act)
    assert_close(found, {"ffn_of_shuffled": check.of_shuffled, "shuffled_ffn": check.shuffled_output})
    plain, causal = torch_block_outputs(x, weights, n_heads, activation=act, placement=placement)
    assert_close(found, {"torch_output": plain, "torch_causal_output": causal})
    assert np.asarray(found["attention_weights"]).shape == (n_heads, 3, 3)
    assert len(found["grad_norm"]) == int(view["layers"])


@pytest.mark.parametrize("change", [{"heads": 3}, {"d_model": 2, "heads": 1}, {"perm": [0, 0, 1]}, {"layers": 25},
                                    {"act": "tanh"}, {"ln": "sandwich"}])
def test_a_view_the_page_cannot_show_is_not_written(change):
    view = {"seed": 0, "d_model": 4, "heads": 1, "d_ff": 16, "act": "relu", "ln": "post", "layers": 24,
            "residual": True, "norm": True, "perm": [2, 0, 1]}
    assert settings_of("transformer_block", view)["perm"] == [2, 0, 1]
    with pytest.raises(NotWritableError):
        settings_of("transformer_block", {**view, **change})
