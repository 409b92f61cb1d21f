"""The shapes and sizes of every value the poll stores, checked before anything reaches the database.

Each check returns the value it accepted or raises `MalformedInputError` with a message naming the value. Text
must be a `str` that UTF-8 can encode (no lone surrogates) without NUL characters (PostgreSQL's text refuses
them), within its length cap.
"""

from __future__ import annotations

import re

from poll.errors import MalformedInputError

#: A page or quiz name: what the app's own code names them (``multi_head``, ``scaling_largest_weight``).
NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
#: A round id as `secrets.token_urlsafe` makes it.
ROUND_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
#: A browser's random token (`poll.voters.new_browser_token`); short ones are refused, being guessable.
BROWSER_TOKEN = re.compile(r"[A-Za-z0-9_-]{22,128}")
#: A client's name as the presenter key's throttle sees it (any printable text the UI chooses, e.g. a session id).
CLIENT_ID_CHARS = 200

QUESTION_CHARS = 2_000
OPTION_CHARS = 300
EXPLANATION_CHARS = 20_000
#: The query string of the settings a round was asked at.
SETTINGS_CHARS = 4_000
MIN_OPTIONS = 2
MAX_OPTIONS = 12


def checked_text(value: object, what: str, max_chars: int) -> str:
    """`value` if it is storable text of at most `max_chars` characters."""
    if not isinstance(value, str):
        raise MalformedInputError(f"The {what} must be text.")
    if len(value) > max_chars:
        raise MalformedInputError(f"The {what} is too long ({len(value):,} characters; at most {max_chars:,}).")
    if "\x00" in value:
        raise MalformedInputError(f"The {what} contains a NUL character.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedInputError(f"The {what} contains characters that are not valid text.") from None
    return value


def checked_pattern(value: object, what: str, pattern: re.Pattern[str]) -> str:
    """`value` if it is a `str` matching all of `pattern`."""
    if not isinstance(value, str) or len(value) > 256 or not pattern.fullmatch(value):
        raise MalformedInputError(f"The {what} is not well formed.")
    return value


def checked_name(value: object, what: str) -> str:
    """A page's or quiz's name (`NAME`)."""
    return checked_pattern(value, what, NAME)


def checked_round_id(value: object) -> str:
    """A round id's shape; whether the store issued it is the store's check (`UnknownRoundError`)."""
    return checked_pattern(value, "round id", ROUND_ID)
