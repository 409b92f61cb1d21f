"""What a browser fetches from the app's server before it opens the websocket: Streamlit's front end.

A student's first visit is not only the page's HTML and its first script run. The browser then loads the front
end, well over a hundred script, style and font files, from the same process, and only then connects. Browsers
keep them afterwards (Streamlit marks them immutable), so only a first visit pays, but in a lecture hall every
visit is a first one. `recorded_files` asks Chromium which files a first visit of the landing page fetches;
`benchmarks.protocol.Student.connect` then fetches them as a browser does (`python -m benchmarks.load
--front-end`), and ``python -m benchmarks.front_end`` measures what serving them costs the server.
"""

from __future__ import annotations

import argparse
import statistics
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from benchmarks.protocol import cpu_s, fetch_front_end, run_coroutine
from devtools.appserver import AppServer


def recorded_files(url: str) -> list[str]:
    """The paths a fresh Chromium fetched from the app's server on a first visit of its landing page, in order:
    everything but the page itself and the websocket.

    Recorded on a thread of its own: Playwright's sync API cannot start on a thread that already runs it (a test
    worker with a browser open)."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(_recorded_files, url).result()


def _recorded_files(url: str) -> list[str]:
    from playwright.sync_api import sync_playwright

    from devtools.browser import launch, settle

    fetched: list[str] = []
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        page.on("request", lambda request: fetched.append(request.url))
        page.goto(url + "/")
        settle(page)
        browser.close()
    paths = [urllib.parse.urlsplit(u) for u in fetched if u.startswith(url)]
    return list(dict.fromkeys(p.path + (f"?{p.query}" if p.query else "") for p in paths
                              if p.path not in ("", "/") and not p.path.endswith("/_stcore/stream")))


def serving_cpu_ms(url: str, pid: int, paths: list[str], visits: int) -> float:
    """The server's CPU (process `pid`) to serve `paths` to `visits` first visits one after the other, in ms a
    visit."""
    before = cpu_s(pid)
    for _ in range(visits):
        run_coroutine(fetch_front_end(url, paths))
    return (cpu_s(pid) - before) / visits * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.front_end",
                                     description="What serving a first visit's front end costs the app's server.")
    parser.add_argument("--visits", type=int, default=5, help="visits a round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with AppServer() as server:
        paths = recorded_files(server.url)
        rounds = [serving_cpu_ms(server.url, server.proc.pid, paths, args.visits) for _ in range(args.rounds)]
    print(f"{len(paths)} files a first visit; server CPU a visit's files, by round: "
          f"{', '.join(f'{ms:.0f}' for ms in rounds)} ms (median {statistics.median(rounds):.0f} ms)")


if __name__ == "__main__":
    main()
