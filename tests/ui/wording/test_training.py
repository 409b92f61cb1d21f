"""The training page's sentence without positional encoding: beating guessing is claimed only when measured."""

import pytest

from ui.wording.training import without_positions


@pytest.mark.parametrize("accuracy, vocab, beats", [(0.62, 2, True), (0.5, 2, False), (0.08, 10, False),
                                                    (0.11, 10, True)])
def test_beating_guessing_is_said_only_when_the_accuracy_does(accuracy, vocab, beats):
    text = without_positions("reverse the sequence", accuracy, vocab)
    assert f"reached {accuracy:.1%}" in text and f"guessing: {1 / vocab:.1%}" in text
    assert ("It beats guessing" in text) == beats and ("no better than guessing" in text) == (not beats)
