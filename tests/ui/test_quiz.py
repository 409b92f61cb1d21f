"""Every concept page asks a "predict, then reveal" question whose answer the page computes."""

import pytest

from tests.helpers.apptest import run_page

# (page, quiz key, query string, the answer the page must compute for that view)
QUIZZES = [
    ("app_pages/soft_lookup.py", "soft_lookup_cold", {}, "the hard lookup's value"),
    ("app_pages/scaled_attention.py", "scaling_16x", {}, "it grows towards 1"),
    ("app_pages/multi_head.py", "multi_head_width", {}, "it halves"),
    ("app_pages/permutation.py", "permutation_same", {}, "is the same vector, just in its new row"),
    ("app_pages/positional_encoding.py", "pe_similarity", {"positions": "64", "d_model": "64"}, "position 11"),
    ("app_pages/masked_attention.py", "masked_zero", {}, "exactly 0"),
    ("app_pages/cross_attention.py", "cross_rows", {}, "target (decoder) words"),
    ("app_pages/transformer_block.py", "transformer_block_gradient", {"residual": "false"},
     "it is over 10 times smaller"),
]


@pytest.mark.parametrize("page, key, query, answer", QUIZZES, ids=[q[1] for q in QUIZZES])
def test_the_answer_is_hidden_until_the_student_commits(page, key, query, answer):
    at = run_page(page, **query)
    assert not at.exception
    choice = at.radio(key=f"quiz_{key}_choice")
    assert choice.value is None and answer in choice.options
    assert at.button(key=f"quiz_{key}_reveal").disabled  # no peeking without a guess
    wrong = next(o for o in choice.options if o != answer)
    choice.set_value(wrong).run()
    at.button(key=f"quiz_{key}_reveal").click().run()
    assert not at.exception
    assert any(f"the computed answer is **{answer}**" in w.value for w in at.warning)
