"""training.tasks and training.config: the tasks, the held-out data, reading digits, checking a configuration."""

import numpy as np
import pytest
import torch

from tests.training.tiny import TINY
from training.config import TASKS, TrainConfig
from training.tasks import answer_attention, held_out_set, make_targets, parse_digits, sequence_codes, training_batch


@pytest.mark.parametrize(("task", "expected"), [
    ("reverse", [[1, 2, 1, 3], [0, 9, 8, 7]]),
    ("copy", [[3, 1, 2, 1], [7, 8, 9, 0]]),
    ("sort", [[1, 1, 2, 3], [0, 7, 8, 9]]),
    ("first", [[3, 3, 3, 3], [7, 7, 7, 7]]),
])
def test_each_task_produces_the_right_answer(task, expected):
    x = torch.tensor([[3, 1, 2, 1], [7, 8, 9, 0]])
    assert make_targets(x, task).tolist() == expected
    assert x.tolist() == [[3, 1, 2, 1], [7, 8, 9, 0]]  # the input is not modified


@pytest.mark.parametrize("task", sorted(TASKS))
def test_targets_on_random_data_match_a_plain_python_definition(task):
    x = torch.randint(0, 10, (50, 7), generator=torch.Generator().manual_seed(1))
    y = make_targets(x, task)
    for row, out in zip(x.tolist(), y.tolist(), strict=True):
        want = {"reverse": row[::-1], "copy": row, "sort": sorted(row), "first": [row[0]] * len(row)}[task]
        assert out == want


def test_unknown_task_raises():
    with pytest.raises(ValueError, match="task must be one of"):
        make_targets(torch.zeros(1, 3, dtype=torch.int64), "shuffle")


# ----------------------------------------------------------------------------------------------- data


def test_sequence_codes_identify_rows():
    x = torch.tensor([[1, 2, 3], [3, 2, 1], [1, 2, 3], [0, 0, 9]])
    codes = sequence_codes(x, 10)
    assert codes.tolist() == [123, 321, 123, 9]


def test_held_out_set_is_distinct_in_range_and_seeded():
    x = held_out_set(TINY)
    assert x.shape == (64, 5) and x.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < TINY.vocab
    assert len(set(map(tuple, x.tolist()))) == 64  # distinct
    assert torch.equal(x, held_out_set(TINY))  # same seed, same set
    assert not torch.equal(x, held_out_set(TrainConfig(**{**TINY.__dict__, "seed": 1})))


def test_tiny_space_holds_out_a_quarter_and_training_never_sees_it():
    config = TrainConfig(seq_len=3, vocab=2, batch=32, n_eval=512)  # only 2**3 = 8 possible sequences
    x_eval = held_out_set(config)
    assert x_eval.shape == (2, 3) and len(set(map(tuple, x_eval.tolist()))) == 2
    codes = sequence_codes(x_eval, 2)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        batch = training_batch(config, g, codes)
        assert batch.shape == (32, 3)
        assert not torch.isin(sequence_codes(batch, 2), codes).any()


def test_parse_digits_accepts_spaces_commas_or_nothing():
    assert parse_digits("3 1 4 1", 10, 8) == [3, 1, 4, 1]
    assert parse_digits("3,1,4,1", 10, 8) == [3, 1, 4, 1]
    assert parse_digits(" 3141 ", 10, 8) == [3, 1, 4, 1]
    assert parse_digits("7", 10, 8) == [7]


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("3 1 x", "'x' is not in the vocabulary"),
    ("3 7 9", "'7', '9' are not in the vocabulary: the model knows the digits 0 to 4"),
    ("-1 2", "not in the vocabulary"),
    ("123456789", "9 digits is more than the 8 positions"),
])
def test_parse_digits_explains_bad_input(text, message):
    with pytest.raises(ValueError, match=message):
        parse_digits(text, 5 if "0 to 4" in message else 10, 8)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"task": "shuffle"}, "task must be one of"),
    ({"pos": "rotary"}, "pos must be one of"),
    ({"d_model": 30, "n_heads": 4}, "not divisible by n_heads=4"),
    ({"seq_len": 1}, "at least 2"),
    ({"vocab": 10, "seq_len": 40}, "too many sequences"),
    ({"lr": 0.0}, "lr must be a positive number"),
    ({"steps": 0}, "steps must be a positive integer"),
    ({"seed": -1}, "seed must be a non-negative integer"),
])
def test_bad_configs_raise_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kwargs)



def test_answer_attention():
    x = np.array([4, 2, 7, 1])
    y = x[::-1]
    anti = np.eye(4)[::-1][None, None]  # (1, 1, T, T): query i looks at key T-1-i
    np.testing.assert_allclose(answer_attention(anti, x, y), [[1.0]])
    np.testing.assert_allclose(answer_attention(np.eye(4)[None, None], x, y), [[0.0]])
    np.testing.assert_allclose(answer_attention(np.full((2, 3, 4, 4), 0.25), x, y), np.full((2, 3), 0.25))
    repeated = np.array([5, 5, 5, 5])  # every key holds every answer
    np.testing.assert_allclose(answer_attention(np.full((1, 1, 4, 4), 0.25), repeated, repeated), [[1.0]])
    with pytest.raises(ValueError, match="maps"):
        answer_attention(np.ones((1, 1, 3, 3)), x, y)


@pytest.mark.parametrize(("task", "expected"), [("reverse", [6, 2, 9, 3]), ("copy", [3, 9, 2, 6]),
                                                ("sort", [2, 3, 6, 9]), ("first", [3, 3, 3, 3])])
def test_target_of_one_sequence(task, expected):
    from training.tasks import target_of

    assert target_of([3, 9, 2, 6], task).tolist() == expected
