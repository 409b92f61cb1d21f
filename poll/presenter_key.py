"""The presenter key: the secret that lets the lecturer open, lock, reveal, reset and download a poll.

Where it comes from, first found first: the value the caller read from Streamlit's secrets
(``.streamlit/secrets.toml``; this package never imports Streamlit), the environment variable
``ATTENTION_PRESENTER_KEY``, or a key generated once and kept in the data directory's ``presenter-key`` file
(mode 0600), so every process on the machine that uses the directory agrees on it. A server prints a generated
key once in its log at start (as Jupyter prints its token) and nowhere else. Processes on several machines
must be given the key (secrets or environment): each machine would generate its own.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from poll.errors import PresenterKeySetupError

PRESENTER_KEY_ENV = "ATTENTION_PRESENTER_KEY"
#: The addresses of the proxies in front of the app on other machines (nginx, on a department's servers), separated by
#: commas or spaces: their X-Forwarded-For names the client a wrong key is charged to.
TRUSTED_PROXIES_ENV = "ATTENTION_TRUSTED_PROXIES"
KEY_FILE_NAME = "presenter-key"
#: A configured key shorter than this is refused: a throttle only slows guessing, it cannot make a short key safe.
MIN_KEY_CHARS = 16
KeySource = Literal["secrets", "environment", "generated"]


@dataclass(frozen=True)
class PresenterKey:
    """The key and where it came from; `generated_now` is True in the process that made it."""

    value: str = field(repr=False)
    source: KeySource
    generated_now: bool = False

    def matches(self, attempt: object) -> bool:
        """Whether `attempt` is the key, compared in constant time (for any attempt of the key's length)."""
        if not isinstance(attempt, str):
            return False
        return hmac.compare_digest(attempt.encode("utf-8", "surrogatepass"), self.value.encode("utf-8"))


def presenter_key(from_secrets: str | None, data_dir: Path, env: Mapping[str, str] = os.environ) -> PresenterKey:
    """The presenter key in force (see the module's docstring)."""
    for value, source in ((from_secrets, "secrets"), (env.get(PRESENTER_KEY_ENV), "environment")):
        if value:
            if len(value.strip()) < MIN_KEY_CHARS:
                raise PresenterKeySetupError(f"The presenter key from the {source} is shorter than "
                                             f"{MIN_KEY_CHARS} characters.")
            return PresenterKey(value.strip(), source)  # type: ignore[arg-type]
    value, generated_now = _stored_or_new_key(Path(data_dir))
    return PresenterKey(value, "generated", generated_now)


def _stored_or_new_key(data_dir: Path) -> tuple[str, bool]:
    """The key in `data_dir`'s key file, made first if there is none (one process wins a race; all read it)."""
    path = data_dir / KEY_FILE_NAME
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            made = _write_new_key(path)
            if made is not None:
                return made, True
        return _read_key(path), False
    except OSError as error:
        raise PresenterKeySetupError(f"The presenter key file in {data_dir} cannot be used: {error.strerror}.") \
            from error


def _write_new_key(path: Path) -> str | None:
    """Write a new key to `path` whole (a private temporary file linked into place); None if one was there."""
    key = secrets.token_urlsafe(32)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(key + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)  # fails if another process linked its key first
    except FileExistsError:
        return None
    finally:
        temporary.unlink(missing_ok=True)
    return key


def _read_key(path: Path) -> str:
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode) or mode & 0o077:
        raise PresenterKeySetupError(f"The presenter key file {path} must be a file only its owner can read "
                                     f"(chmod 600 {path}).")
    value = path.read_text().strip()
    if len(value) < MIN_KEY_CHARS:
        raise PresenterKeySetupError(f"The presenter key file {path} holds no usable key; delete it to make a new one.")
    return value
