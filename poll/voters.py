"""Who voted, without knowing who: a keyed hash of a browser's random token.

The UI gives each browser a random token (`new_browser_token`, kept in a cookie or the browser's storage) and
hands it to `VoterHasher.voter`; the store only ever sees the resulting `Voter`, an HMAC-SHA256 of the token
under the store's secret. No name, address or raw token is stored, and the digest cannot be turned back into
the token. One browser is one voter: a reload or a second tab sends the same token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field

from poll.errors import MalformedInputError
from poll.limits import BROWSER_TOKEN, checked_pattern

_DIGEST = re.compile(r"[0-9a-f]{64}")
#: Bytes of the store's secret (`PollStore.voter_hasher`).
SECRET_BYTES = 32


def new_browser_token() -> str:
    """A fresh random token for a browser that has none."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Voter:
    """A voter as the store knows them: the hex HMAC of their browser's token."""

    digest: str

    def __post_init__(self) -> None:
        if not isinstance(self.digest, str) or not _DIGEST.fullmatch(self.digest):
            raise MalformedInputError("The voter is not well formed.")


@dataclass(frozen=True)
class VoterHasher:
    """Turns browser tokens into `Voter`s under one secret (the same for every process sharing a store)."""

    secret: bytes = field(repr=False)

    def voter(self, browser_token: str) -> Voter:
        token = checked_pattern(browser_token, "browser token", BROWSER_TOKEN)
        return Voter(hmac.new(self.secret, token.encode("ascii"), hashlib.sha256).hexdigest())
