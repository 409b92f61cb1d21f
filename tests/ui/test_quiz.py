"""Every concept page asks a "predict, then reveal" question whose answer the page computes."""

import pytest

from tests.helpers.apptest import run_page
from tests.helpers.registry import declarations, page_file

#: Every page's "predict, then reveal" question that its `PageTests` declares (``quiz``): its key, a link, and the
#: answer the page must compute for that view.
QUIZZES = {page: shared.quiz for page, shared in declarations().items() if shared.quiz}


@pytest.mark.parametrize("page", QUIZZES, ids=lambda page: f"{page}-{QUIZZES[page].key}")
def test_the_answer_is_hidden_until_the_student_commits(page):
    key, query, answer = QUIZZES[page].key, QUIZZES[page].query, QUIZZES[page].answer
    at = run_page(page_file(page), **query)
    assert not at.exception
    choice = at.radio(key=f"quiz_{key}_choice")
    assert choice.value is None and answer in choice.options
    assert at.button(key=f"quiz_{key}_reveal").disabled  # no peeking without a guess
    wrong = next(o for o in choice.options if o != answer)
    choice.set_value(wrong).run()
    at.button(key=f"quiz_{key}_reveal").click().run()
    assert not at.exception
    assert any(f"the computed answer is **{answer}**" in w.value for w in at.warning)
