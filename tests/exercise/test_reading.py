"""`exercise.reading`: the lines of a submission a diagnosis points to, read without running the code, and what the
parent keeps of them (`exercise.results.decode_reading`: the data came from the student's process)."""

from __future__ import annotations

import pytest

from exercise.reading import KINDS, read_source
from exercise.results import SourceLine, SourceReading, decode_reading, student_error

SOURCE = '''import torch
import torch.nn.functional as F

def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1)
    scores.masked_fill(mask == 0, float("-inf"))
    kept = scores.masked_fill(mask == 0, 0.0)
    print(scores.masked_fill(mask == 0, 1.0))
    if mask is not None: torch.masked_fill(kept, mask == 0, -1e9)
    weights = F.softmax(scores, dim=-1)
    out = F.scaled_dot_product_attention(Q, K, V,
                                         is_causal=True)
    return weights @ V, weights.softmax(-1)
'''


def test_unassigned_masked_fill_softmax_and_is_causal_lines_are_found():
    found = read_source(SOURCE)
    assert [(e["line"], e["tensor"], e["call"]) for e in found["unassigned"]] == [
        (6, "scores", 'scores.masked_fill(mask == 0, float("-inf"))'),
        (9, "kept", "torch.masked_fill(kept, mask == 0, -1e9)"),
    ]
    assert found["unassigned"][1]["text"] == "if mask is not None: torch.masked_fill(kept, mask == 0, -1e9)"
    assert [(e["line"], e["text"]) for e in found["softmax"]] == [
        (10, "weights = F.softmax(scores, dim=-1)"), (13, "return weights @ V, weights.softmax(-1)")]
    assert [e["line"] for e in found["is_causal"]] == [11]


RARER = '''import torch
from torch import nn

D_MODEL: int = 512
heads = 8
scale, flag = 0.5, True

def scaled_dot_product_attention(x, K, V, mask=None):
    drop = nn.Dropout(0.1)
    s = torch.tanh(x @ x.transpose(-2, -1) / D_MODEL ** 0.5).clamp(-5, 5)
    return drop(s.softmax(-1)) @ x, s
'''


def test_dropout_bounded_functions_numbers_and_unread_parameters_are_found():
    found = read_source(RARER)
    assert [(e["line"], e["text"]) for e in found["dropout"]] == [
        (9, "drop = nn.Dropout(0.1)"), (11, "return drop(s.softmax(-1)) @ x, s")]
    assert [(e["line"], e["name"]) for e in found["squash"]] == [(10, "clamp"), (10, "tanh")]
    assert [(e["line"], e["name"], e["value"]) for e in found["constants"]] == [(4, "D_MODEL", 512.0), (5, "heads", 8.0)]
    assert [(e["line"], e["name"], e["value"]) for e in found["unread"]] == [(8, "K", 1.0), (8, "V", 2.0),
                                                                              (8, "mask", 3.0)]
    reading = decode_reading(found)
    assert reading.unread[0] == SourceLine(8, "def scaled_dot_product_attention(x, K, V, mask=None):", name="K",
                                           value=1.0)
    assert decode_reading({"constants": [{"line": 4, "name": "n", "value": float("nan")}]}).constants[0].value is None


@pytest.mark.parametrize("source", ["def f(:\n", "x = 1\0", "(" * 1000 + ")" * 1000])
def test_code_that_does_not_parse_reads_as_nothing(source):
    assert read_source(source) == {kind: [] for kind in KINDS}


def test_the_run_reports_what_the_source_reads():
    from exercise.readback import absorb_messages
    from exercise.results import RunResult
    from exercise.runner import run_source

    messages: list[dict] = []
    run_source(SOURCE, [], messages.append)
    run = RunResult()
    absorb_messages(messages, run, timeout_s=0, timed_out=None)
    assert run.reading.unassigned[0] == SourceLine(6, 'scores.masked_fill(mask == 0, float("-inf"))', "scores",
                                                   'scores.masked_fill(mask == 0, float("-inf"))')
    assert [line.number for line in run.reading.softmax] == [10, 13]


@pytest.mark.parametrize(
    "msg",
    [None, 7, {"unassigned": "many"}, {"softmax": [{"line": "3"}, {"line": -1}, {"line": True}, {}, 5]},
     {"is_causal": [{"line": 10**9}]}],
)
def test_malformed_readings_decode_to_nothing(msg):
    assert decode_reading(msg) == SourceReading()


def test_texts_that_cannot_be_shown_as_code_are_dropped_and_the_line_kept():
    reading = decode_reading({"unassigned": [{"line": 4, "text": "x.masked_fill(m, 0)  # `x`", "tensor": "x",
                                              "call": "x.masked_fill(m,\n 0)"}] * 20})
    assert reading.unassigned[0] == SourceLine(4, "", "x", "")
    assert len(reading.unassigned) == 8
    assert reading.unassigned[0].shown() == "line 4"


@pytest.mark.parametrize(
    ("error", "said"),
    [("AttributeError: 'Tensor' object has no attribute 'mask_fill' (line 9: e = e.mask_fill(m, 0))",
      "Did you mean `masked_fill`? A tensor has no `mask_fill`: correct the name on line 9."),
     ("AttributeError: 'Tensor' object has no attribute 'transpos'",
      "Did you mean `transpose`? A tensor has no `transpos`: correct the name."),
     ("AttributeError: module 'torch' has no attribute 'sofmax' (line 3: w = torch.sofmax(s, -1))",
      "Did you mean `softmax`? `torch` has no `sofmax`: correct the name on line 3."),
     ("AttributeError: module 'math' has no attribute 'sqr' (line 3: math.sqr(4))", "Did you mean `sqrt`?")],
)
def test_a_misspelled_name_gets_the_closest_real_one(error, said):
    assert student_error(error).startswith(f"{error}. ") and said in student_error(error)


@pytest.mark.parametrize("error", ["AttributeError: 'Tensor' object has no attribute 'qqqqqqqq'",
                                   "AttributeError: 'Model' object has no attribute 'mask_fill'",
                                   "AttributeError: module 'numpy' has no attribute 'sofmax'",
                                   "NameError: name 'mask_fill' is not defined"])
def test_no_name_is_suggested_for_other_errors_or_nothing_close(error):
    assert student_error(error) == error
