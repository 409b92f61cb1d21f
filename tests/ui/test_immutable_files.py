"""`ui.immutable_files.ImmutableFiles`: a front-end file is answered from memory after Streamlit's first answer,
byte for byte as Streamlit sent it, and nothing else is."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from benchmarks.protocol import run_coroutine
from ui.immutable_files import ImmutableFiles

IMMUTABLE = (b"cache-control", b"public, immutable, max-age=31536000")
JS = b"console.log('front end');" * 100


class FileServer:
    """Stands in for Streamlit: answers every request with `status`, `headers` and `body` (in two chunks), and
    counts the requests it was given."""

    def __init__(self, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None, body: bytes = JS):
        self.status, self.body, self.calls = status, body, 0
        self.headers = [(b"content-type", b"text/javascript"), (b"content-length", str(len(body)).encode()),
                        (b"etag", b'"abc"'), IMMUTABLE] if headers is None else headers

    async def __call__(self, scope, receive, send) -> None:
        self.calls += 1
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        half = len(self.body) // 2
        await send({"type": "http.response.body", "body": self.body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": self.body[half:]})


def request(app, path: str = "/static/js/main.abc123.js", method: str = "GET",
            headers: list[tuple[bytes, bytes]] = ()) -> tuple[int, list, bytes]:
    """What `app` answers to one HTTP request: status, headers, the whole body."""
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": list(headers), "query_string": b""}
    run_coroutine(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], list(start["headers"]), body


def test_a_second_get_of_an_immutable_file_is_answered_from_memory_exactly_as_streamlit_answered_the_first():
    streamlit = FileServer()
    app = ImmutableFiles(streamlit)
    first, second = request(app), request(app)
    assert first == second == (200, streamlit.headers, JS)
    assert streamlit.calls == 1 and app.kept_bytes == len(JS)


@pytest.mark.parametrize("asks", [
    {"method": "HEAD"}, {"method": "POST"},
    {"path": "/_stcore/health"}, {"path": "/"}, {"path": "/scaled_attention"},
    {"headers": [(b"range", b"bytes=0-99")]}, {"headers": [(b"if-none-match", b'"abc"')]},
    {"headers": [(b"if-modified-since", b"Sat, 05 Dec 2026 10:00:00 GMT")]},
], ids=lambda asks: "-".join(map(str, asks.values())))
def test_other_requests_always_go_to_streamlit(asks):
    streamlit = FileServer()
    app = ImmutableFiles(streamlit)
    for _ in range(2):
        assert request(app, **asks)[2] == JS
    assert streamlit.calls == 2 and not app.kept


@pytest.mark.parametrize("answer", [
    {"status": 404},
    {"headers": [(b"content-length", str(len(JS)).encode()), (b"cache-control", b"no-cache")]},  # the page, a manifest
    {"headers": [(b"content-length", str(len(JS)).encode())]},
    {"headers": [(b"content-length", str(len(JS)).encode()), IMMUTABLE, (b"set-cookie", b"session=1")]},
    {"headers": [(b"content-length", str(len(JS)).encode()), IMMUTABLE, (b"vary", b"Accept-Encoding")]},
    {"headers": [(b"content-length", str(len(JS)).encode()), IMMUTABLE, (b"content-encoding", b"gzip")]},
    {"headers": [IMMUTABLE]},  # no length: not known to be whole
    {"headers": [(b"content-length", b"7"), IMMUTABLE]},  # cut short
], ids=["404", "no-cache", "no-cache-control", "cookie", "vary", "gzip", "no-length", "short"])
def test_an_answer_that_could_differ_or_is_not_a_whole_immutable_file_is_never_kept(answer):
    streamlit = FileServer(**answer)
    app = ImmutableFiles(streamlit)
    request(app), request(app)
    assert streamlit.calls == 2 and not app.kept


def test_at_most_max_bytes_are_kept_the_first_files_first():
    streamlit = FileServer()
    app = ImmutableFiles(streamlit, max_bytes=len(JS) + 10)
    request(app, "/static/js/a.js"), request(app, "/static/js/b.js")
    assert set(app.kept) == {"/static/js/a.js"} and app.kept_bytes == len(JS)
    request(app, "/static/js/a.js"), request(app, "/static/js/b.js")
    assert streamlit.calls == 3


def test_a_base_url_s_front_end_is_kept_too():
    streamlit = FileServer()
    app = ImmutableFiles(streamlit)
    request(app, "/course/static/js/main.js"), request(app, "/course/static/js/main.js")
    assert streamlit.calls == 1


def test_the_served_app_answers_its_front_end_from_memory_the_same_as_streamlit_does():
    """From outside: a real server's second answer for a file of the front end has the same status, headers (but
    the date) and bytes as its first, and both are the file Streamlit ships."""
    import streamlit

    from devtools.appserver import AppServer

    with AppServer(env={"ATTENTION_DISABLE_EXEC": "1"}) as server:
        with urllib.request.urlopen(server.url + "/") as page:
            script = re.search(r'src="\.?/?(static/js/[^"]+\.js)"', page.read().decode()).group(1)
        answers = []
        for _ in range(2):
            with urllib.request.urlopen(f"{server.url}/{script}") as response:
                headers = sorted((k.lower(), v) for k, v in response.getheaders() if k.lower() != "date")
                answers.append((response.status, headers, response.read()))
    shipped = (Path(streamlit.__file__).parent / "static" / script).read_bytes()
    assert answers[0] == answers[1]
    assert answers[0][0] == 200 and answers[0][2] == shipped
    assert ("cache-control", "public, immutable, max-age=31536000") in answers[0][1]


def test_the_app_serves_its_front_end_through_the_middleware():
    """`streamlit_app.py` gives the middleware to its `st.App` (read from the source: the app object is built when
    `streamlit run` imports the file)."""
    import ast

    tree = ast.parse((Path(__file__).resolve().parents[2] / "streamlit_app.py").read_text())
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and ast.unparse(node.func) == "st.App"]
    middleware = next(k.value for k in call.keywords if k.arg == "middleware")
    assert "Middleware(ImmutableFiles)" in ast.unparse(middleware)
