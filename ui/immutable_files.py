"""The front end's files, answered from memory after their first request (an ASGI middleware of the `st.App`).

A browser that has never opened the app fetches Streamlit's front end before it connects: over a hundred script,
style and font files from the app's process. Streamlit serves each through its middleware stack and Starlette's
static files, which look the file up and read it in worker threads. In a lecture hall every visit is such a
first visit, all within seconds, on one process; the scripts' runs wait behind them.

Streamlit marks these files ``immutable``: a file's name changes with its content, so its bytes never do. This
middleware keeps each such answer the first time Streamlit gives it, status, headers and body, and gives it again
to every later plain ``GET`` of the same path. What it keeps is exactly what Streamlit sent, so a browser cannot
tell the two apart. Anything else goes to Streamlit as before: other methods, conditional and range requests,
other paths, and any answer that is not a whole ``200`` marked immutable, or that could differ from one request
to the next (a cookie set, a ``Vary``, a compressed body).
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: Where Streamlit serves its front end, below the app's base URL.
STATIC_PREFIX = "/static/"
#: At most this many bytes are kept (Streamlit's whole front end is about 25 MB; a first visit fetches about 4.4).
MAX_BYTES = 48 * 2**20
#: Request headers that ask for part of a file, or for an answer only if it changed: such requests go to Streamlit.
_PASSED_ON = {b"range", b"if-none-match", b"if-modified-since", b"if-range"}


@dataclass(frozen=True)
class KeptAnswer:
    """One answer as Streamlit sent it: its status line's code, its headers, its whole body."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class ImmutableFiles:
    """ASGI middleware: answers a plain ``GET`` of an immutable front-end file from memory after Streamlit's first
    answer to it (at most `max_bytes` kept, first come first kept)."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.kept: dict[str, KeptAnswer] = {}
        self.kept_bytes = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._may_keep(scope):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        answer = self.kept.get(path)
        if answer is not None:
            await send({"type": "http.response.start", "status": answer.status, "headers": answer.headers})
            await send({"type": "http.response.body", "body": answer.body})
            return
        await self.app(scope, receive, self._keeping(path, send))

    @staticmethod
    def _may_keep(scope: Scope) -> bool:
        """A plain GET of a path under a front-end prefix (below any base URL), asking for the whole file."""
        return (scope["type"] == "http" and scope["method"] == "GET" and STATIC_PREFIX in scope["path"]
                and not any(name in _PASSED_ON for name, _ in scope["headers"]))

    def _keeping(self, path: str, send: Send) -> Send:
        """`send`, passing every message on and keeping the answer if it is one to keep."""
        start: Message = {}
        chunks: list[bytes] = []

        async def send_and_keep(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body" and start:
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    self._keep(path, start, b"".join(chunks))

        return send_and_keep

    def _keep(self, path: str, start: Message, body: bytes) -> None:
        named = {bytes(name).lower(): bytes(value) for name, value in start.get("headers", [])}
        whole = named.get(b"content-length") == str(len(body)).encode()
        per_request = b"set-cookie" in named or b"vary" in named or b"content-encoding" in named
        if (start["status"] != 200 or b"immutable" not in named.get(b"cache-control", b"") or per_request
                or not whole or path in self.kept or self.kept_bytes + len(body) > self.max_bytes):
            return
        self.kept[path] = KeptAnswer(start["status"], list(start.get("headers", [])), body)
        self.kept_bytes += len(body)
