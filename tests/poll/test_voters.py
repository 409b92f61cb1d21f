"""A voter is the keyed hash of a browser's token: stable per secret, unlinkable without it."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from poll import MalformedInputError, VoterHasher, new_browser_token


def test_one_token_is_one_voter_under_one_secret_and_another_under_another():
    token = new_browser_token()
    first, second = VoterHasher(b"a" * 32), VoterHasher(b"b" * 32)
    assert first.voter(token) == first.voter(token)
    assert first.voter(token) != second.voter(token)
    assert first.voter(token) != first.voter(new_browser_token())
    assert first.voter(token).digest == hmac.new(b"a" * 32, token.encode(), hashlib.sha256).hexdigest()


def test_the_secret_is_not_in_the_hashers_repr():
    assert "s3cr3t" not in repr(VoterHasher(b"s3cr3t" * 6))


@pytest.mark.parametrize("token", ["", "short", "x" * 129, "has spaces in it, twenty+", None, b"x" * 40,
                                   "é" * 30])
def test_a_malformed_browser_token_is_refused(token):
    with pytest.raises(MalformedInputError, match="browser token"):
        VoterHasher(b"k" * 32).voter(token)
