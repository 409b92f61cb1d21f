"""`PresenterKeyGuard`: checks presenter keys and slows down a client that keeps giving wrong ones.

Per client (whatever the UI names one: an address, a browser's token), counting wrong keys in a row:
the first `free_tries` cost nothing; each further one makes the client wait, twice as long each time, up to
`max_delay_s`; from the `lockout_after`-th on, each locks the client out for `lockout_s`. While a client waits,
no key of theirs is compared at all, the right one included. The right key clears the client's record. Each
process has its own guard (the throttle is per process); the clock is injectable for tests.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from poll.errors import PresenterKeyThrottledError, WrongPresenterKeyError
from poll.limits import CLIENT_ID_CHARS, checked_text
from poll.presenter_key import PresenterKey


@dataclass(frozen=True)
class ThrottlePolicy:
    free_tries: int = 3
    first_delay_s: float = 2.0
    max_delay_s: float = 60.0
    lockout_after: int = 10
    lockout_s: float = 900.0

    def wait_after(self, wrong_in_row: int) -> float:
        """How long a client waits after its `wrong_in_row`-th wrong key in a row."""
        if wrong_in_row >= self.lockout_after:
            return self.lockout_s
        if wrong_in_row <= self.free_tries:
            return 0.0
        return min(self.first_delay_s * 2 ** (wrong_in_row - self.free_tries - 1), self.max_delay_s)


@dataclass(frozen=True)
class _ClientRecord:
    wrong_in_row: int
    blocked_until: float


def wait_text(seconds: float) -> str:
    """``"8 seconds"``, or ``"15 minutes"`` past two minutes (rounded up: never less than the wait)."""
    whole = math.ceil(seconds)
    return f"{math.ceil(whole / 60)} minutes" if whole > 120 else f"{whole} second{'s' * (whole != 1)}"


class PresenterKeyGuard:
    """`guard.check(client, attempt)` returns if `attempt` is the key, else raises a `PresenterKeyError`.

    At most `max_clients` records are kept: past that, the records of clients not waiting are dropped.
    """

    def __init__(self, key: PresenterKey, policy: ThrottlePolicy = ThrottlePolicy(),
                 clock: Callable[[], float] = time.monotonic, max_clients: int = 10_000) -> None:
        self._key = key
        self.policy = policy
        self._clock = clock
        self._max_clients = max_clients
        self._records: dict[str, _ClientRecord] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """How long `client` must still wait before a key of theirs is compared (0 if not waiting)."""
        with self._lock:
            record = self._records.get(client)
            return max(0.0, record.blocked_until - self._clock()) if record is not None else 0.0

    def check(self, client: str, attempt: str) -> None:
        """Raises `PresenterKeyThrottledError` while `client` must wait, `WrongPresenterKeyError` for a wrong key
        (its `retry_after_s` says how long the client must now wait)."""
        client = checked_text(client, "client", CLIENT_ID_CHARS)
        with self._lock:
            now = self._clock()
            record = self._records.get(client, _ClientRecord(0, now))
            if now < record.blocked_until:
                raise PresenterKeyThrottledError(
                    f"Too many wrong presenter keys: try again in {wait_text(record.blocked_until - now)}.",
                    record.blocked_until - now)
            if self._key.matches(attempt):
                self._records.pop(client, None)
                return
            wrong = record.wrong_in_row + 1
            wait = self.policy.wait_after(wrong)
            self._remember(client, _ClientRecord(wrong, now + wait), now)
        message = "That is not the presenter key."
        if wait:
            message += f" Wait {wait_text(wait)} before the next try."
        raise WrongPresenterKeyError(message, wait)

    def _remember(self, client: str, record: _ClientRecord, now: float) -> None:
        self._records[client] = record
        if len(self._records) > self._max_clients:
            self._records = {name: kept for name, kept in self._records.items() if kept.blocked_until > now}
