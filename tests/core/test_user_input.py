"""A student's own tokens and X: every kind of bad edit gives one clear ValueError."""

import numpy as np
import pytest

from core.user_input import MAX_DIMS, MAX_TOKENS, format_matrix, parse_matrix, validate_input


def test_valid_input_round_trips_through_the_url_form():
    tokens, X = validate_input(["the", " cat "], [[1, "0.5"], [-2.25, 1e-3]])
    assert tokens == ("the", "cat")
    np.testing.assert_array_equal(X, [[1, 0.5], [-2.25, 0.001]])
    np.testing.assert_array_equal(np.array(parse_matrix(format_matrix(X)), dtype=float), X)
    assert format_matrix(np.array([[1.0, 0.0], [0.1, -3.0]])) == "1,0;0.1,-3"


@pytest.mark.parametrize(
    "tokens, rows, message",
    [
        ([], [], "no tokens"),
        (["a", ""], [[1], [2]], "Token 2 has no label"),
        (["a", None], [[1], [2]], "Token 2 has no label"),
        (["new york"], [[1]], "contains a space"),
        ([f"t{i}" for i in range(MAX_TOKENS + 1)], [[1]] * (MAX_TOKENS + 1), "more than"),
        (["a", "b"], [[1, 2]], "2 tokens but X has 1 rows"),
        (["a"], [[1] * (MAX_DIMS + 1)], "columns"),
        (["a", "b"], [[1, 2], [3]], "Row 2 of X has 1 entries but row 1 has 2"),
        (["a"], [[1, None]], r"X row 1 \('a'\), column 2 is empty"),
        (["a"], [[1, " "]], "is empty"),
        (["a"], [["abc", 1]], "'abc', not a number"),
        (["a"], [[float("nan"), 1]], "empty or NaN"),
        (["a"], [["inf", 1]], "infinite"),
        (["a"], [[True, 1]], "not a number"),
    ],
)
def test_bad_edits_are_named(tokens, rows, message):
    with pytest.raises(ValueError, match=message):
        validate_input(tokens, rows)


def test_parse_matrix_rejects_empty_and_huge_text():
    with pytest.raises(ValueError, match="empty"):
        parse_matrix("  ")
    with pytest.raises(ValueError, match="at most 2000"):
        parse_matrix("1," * 5000)
    assert parse_matrix("1,2;3,4;") == [["1", "2"], ["3", "4"]]
