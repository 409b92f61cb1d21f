"""What can go wrong in a poll, as typed errors whose message (`str(error)`) a student or the lecturer can read.

The UI shows the message as it is and catches `PollError` alone: every refusal of the poll is one of these, so a
refused vote never becomes an exception box. The database's own error, for the log, is the `__cause__`.
"""

from __future__ import annotations


class PollError(Exception):
    """Anything the poll refused or could not do. Nothing was recorded by the call that raised it."""


class InvalidQuestionError(PollError):
    """A question that cannot be polled: a bug in the page that asks it (no student input reaches it)."""


class MalformedInputError(PollError):
    """A value of the wrong type, too long, or with characters the poll does not store."""


class UnknownRoundError(PollError):
    """A round id the store never issued: forged, mistyped, or from another database."""


class StaleRoundError(PollError):
    """A round that is no longer its page's current round: the lecturer started another or ended the poll."""


class RoundLockedError(PollError):
    """A vote on a round the lecturer has locked (or revealed): answers are closed."""


class UnknownOptionError(PollError):
    """An answer that is not one of the round's options."""


class DatabaseUnavailableError(PollError):
    """The store could not read or write its database. The call changed nothing (or, said so, may have)."""


class PollConfigError(PollError):
    """The poll's configuration cannot be used (an unknown database URL, an unusable data directory)."""


class PresenterKeyError(PollError):
    """Base of the presenter key's refusals."""


class PresenterKeySetupError(PresenterKeyError):
    """The configured or stored presenter key cannot be used (too short, or its file readable by others)."""


class WrongPresenterKeyError(PresenterKeyError):
    """The key given is not the presenter key. `retry_after_s` is how long this client must wait (0: at once)."""

    def __init__(self, message: str, retry_after_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class PresenterKeyThrottledError(PresenterKeyError):
    """Too many wrong keys in a row from this client: no key is checked until `retry_after_s` has passed."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
