""""Predict, then reveal": the student commits to an answer before the app shows the computed one.

Usage, on any page::

    demo = some_core_function(...)                      # the page computes the answer
    predict_then_reveal(
        "What happens to ... ?",
        ["it grows", "it shrinks", "nothing"],
        answer="it shrinks" if demo.value < before else "it grows",   # computed, never typed in
        explanation=f"It drops from {before:.2f} to {demo.value:.2f} because ...",
        key="scaling_largest_weight",
    )

The choice lives in session state only, never in the URL: a shared link must not give the
answer away. After "Reveal" the choice is locked; "Try another answer" starts over.

The quiz is a fragment (`st.fragment`): picking an answer or revealing it reruns the quiz alone, not
the page around it with its charts. It needs no share link of its own (nothing of it is in the URL).

Every quiz is also the class's poll (`ui.class_poll`): in presenter mode the lecturer's panel under it opens the
question to the room; a student sees the open round above their own question, and nothing when none is open.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.class_poll import student_round
from ui.poll_presenter import presenter_panel
from ui.url_state import presenter_mode


def _state_key(key: str, part: str) -> str:
    return f"quiz_{key}_{part}"


@st.fragment
def predict_then_reveal(
    question: str,
    options: Sequence[str],
    answer: str,
    explanation: str,
    key: str,
    *,
    help: str | None = None,
) -> bool | None:
    """Ask `question`; show whether the pick was right, and `explanation`, only after "Reveal".

    Args:
        question: the question (Markdown).
        options: the possible answers; no option is selected at first (``index=None``).
        answer: the right option, **computed by the calling page** from the same code it teaches.
        explanation: Markdown shown after the reveal, ideally with the computed numbers.
        key: unique on the page; the widget keys are ``quiz_<key>_choice`` and ``quiz_<key>_reveal``.
        help: optional tooltip on the question.

    Returns:
        None until revealed, then True if the picked option was `answer`, else False.

    Raises:
        ValueError: if `answer` is not one of `options` (a bug in the calling page).
    """
    options = [str(o) for o in options]
    if len(set(options)) != len(options) or len(options) < 2:
        raise ValueError(f"predict_then_reveal needs at least two distinct options, got {options!r}.")
    if answer not in options:
        raise ValueError(f"the computed answer {answer!r} is not one of the options {options!r}.")
    presenting = presenter_mode()
    if not presenting:
        student_round(key)
    result = _own_answer(question, options, answer, explanation, key, help)
    if presenting:
        presenter_panel(question, options, answer, explanation, key)
    return result


def _own_answer(question: str, options: list[str], answer: str, explanation: str, key: str,
                help: str | None) -> bool | None:
    """The student's own prediction, then the computed answer (session state only)."""
    revealed_key = _state_key(key, "revealed")
    choice_key = _state_key(key, "choice")
    # A reveal only counts while its choice exists (widget state is dropped when the page is left).
    revealed = bool(st.session_state.get(revealed_key, False)) and st.session_state.get(choice_key) is not None

    def reveal() -> None:
        st.session_state[revealed_key] = True

    def reset() -> None:
        st.session_state[revealed_key] = False
        st.session_state[choice_key] = None

    with st.container(border=True):
        choice = st.radio(question, options, index=None, key=choice_key, help=help, disabled=revealed)
        if not revealed:
            st.button("Reveal", key=_state_key(key, "reveal"), on_click=reveal, disabled=choice is None,
                      help="Pick an answer first: committing to a guess is the point." if choice is None else
                      "Show the computed answer.", icon=":material/visibility:")
            return None
        correct = choice == answer
        if correct:
            st.success(f"Right: **{answer}**.", icon=":material/check_circle:")
        else:
            st.warning(f"Not quite: you picked **{choice}**; the computed answer is **{answer}**.",
                       icon=":material/lightbulb:")
        st.markdown(explanation)
        st.button("Try another answer", key=_state_key(key, "reset"), on_click=reset, type="tertiary")
        return correct
