"""Benchmark the app: server-side reruns, slider-to-repaint in the browser, cold start, memory.

    python -m benchmarks [--repeats 7] [--cold-starts 3] [--no-browser] [--room-students 300]
                         [--out benchmarks/results.json]

Prints a table and writes the figures as JSON. Run it on an otherwise idle machine; the
figures are medians. Nothing here asserts on time: targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.timing import median_ms, python_loop_s, server_like_script_cache, time_reruns
from devtools.appserver import ROOT, AppServer, RouterPage, router_pages

#: The name under which a page declares the query string that puts it at its heaviest slider extreme.
HEAVIEST = "HEAVIEST_LINK"


def heaviest_link(page: RouterPage) -> dict[str, str]:
    """The page's `HEAVIEST` link, a literal read from its source (a page is a Streamlit script: importing it would
    run it). Raises `LookupError` saying what to add where."""
    path = ROOT / page.file
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == HEAVIEST for t in targets):
            try:
                link = ast.literal_eval(node.value)
            except ValueError:  # an expression: the source is read, never run
                link = None
            if not (isinstance(link, dict) and all(isinstance(v, str) for v in (*link, *link.values()))):
                raise LookupError(f"{page.file}: {HEAVIEST} must be a dict literal of query keys to texts, not "
                                  f"{ast.unparse(node.value)}")
            return link
    raise LookupError(f"{page.file} declares no {HEAVIEST}: add `{HEAVIEST} = {{...}}` at its module level, the link "
                      "(query key -> value, as text) that makes the page's rerun slowest, `{}` if it has no control; "
                      "`python -m benchmarks` times the page there")


TARGETS = {"rerun_default_ms": 100, "rerun_heaviest_ms": 300, "repaint_ms": 250, "cold_start_s": 5, "rss_mb": 500}
WIDGET_TYPES = ("slider", "select_slider", "toggle", "checkbox", "radio", "selectbox", "multiselect", "text_input",
                "number_input", "button", "text_area")


def bare_page_source(widgets: dict[str, int]) -> str:
    """A page with the same widgets as a real page and no computation at all."""
    lines = ["import streamlit as st"]
    for kind, n in widgets.items():
        for i in range(n):
            lines.append({
                "slider": f"st.slider('s{i}', 0, 10, 1, key='s{i}')",
                "select_slider": f"st.select_slider('ss{i}', [1, 2, 4], key='ss{i}')",
                "toggle": f"st.toggle('t{i}', key='t{i}')",
                "checkbox": f"st.checkbox('c{i}', key='c{i}')",
                "radio": f"st.radio('r{i}', ['a', 'b'], key='r{i}')",
                "selectbox": f"st.selectbox('sb{i}', ['a', 'b'], key='sb{i}')",
                "multiselect": f"st.multiselect('m{i}', ['a', 'b'], key='m{i}')",
                "text_input": f"st.text_input('ti{i}', 'x', key='ti{i}')",
                "text_area": f"st.text_area('ta{i}', 'x', key='ta{i}')",
                "number_input": f"st.number_input('n{i}', key='n{i}')",
                "button": f"st.button('b{i}', key='b{i}')",
            }[kind])
    return "\n".join(lines) + "\n"


def server_side(repeats: int) -> list[dict]:
    from streamlit.testing.v1 import AppTest

    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-bare-"))
    for page in router_pages():
        row: dict = {"page": page.name, "title": page.title}
        for scenario, query in (("default", {}), ("heaviest", heaviest_link(page))):
            at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
            at.switch_page(page.file)
            at.query_params.update(query)
            row[f"rerun_{scenario}_ms"] = median_ms(time_reruns(at, repeats))
            if scenario == "default":
                widgets = {k: len(at.get(k)) for k in WIDGET_TYPES if len(at.get(k))}
        bare = tmp / f"bare_{page.name}.py"
        bare.write_text(bare_page_source(widgets))
        row["widgets"] = sum(widgets.values())
        row["bare_ms"] = median_ms(time_reruns(AppTest.from_file(str(bare), default_timeout=60), repeats))
        row["ratio_default"] = round(row["rerun_default_ms"] / row["bare_ms"], 1)
        rows.append(row)
        print(f"  {page.name:22s} default {row['rerun_default_ms']:7.1f} ms"
              f"  heaviest {row['rerun_heaviest_ms']:7.1f} ms  bare {row['bare_ms']:6.1f} ms"
              f"  x{row['ratio_default']}", flush=True)
    return rows


#: The floor of slider-to-repaint: a page with a title, one slider and one line of text, nothing computed.
FLOOR_PAGE = """import streamlit as st
st.title("bare")
value = st.slider("s", 0, 10, 3)
st.write(f"value {value}")
"""


def slider_repaint(page, repeats: int) -> list[float] | None:
    """Seconds from a keyboard step of the page's first slider to the last paint it caused.

    The last paint is the last change to the main area's DOM or draw on a canvas, timed in the page
    (`devtools.browser.REPAINT_INIT_JS`; the page must have been opened with that init script), and
    counted once nothing more was painted for 300 ms, the app is idle and the page's text has changed.
    Steps alternate right/left, so the first step reaches a state the server has not computed yet (its
    caches are cold) and the later ones revisit states (warm caches, as when a lecturer goes back and forth).
    """
    from devtools.browser import PAGE_TEXT_JS, REPAINTED_JS, WATCH_MAIN_JS

    sliders = page.locator('[data-testid="stMain"] [data-testid="stSlider"] input[type="range"]')
    if sliders.count() == 0:
        return None
    page.evaluate(WATCH_MAIN_JS)
    slider = sliders.first
    samples = []
    for r in range(repeats):
        before = page.evaluate(PAGE_TEXT_JS)
        slider.focus()
        page.keyboard.press("ArrowRight" if r % 2 == 0 else "ArrowLeft")
        page.wait_for_function(REPAINTED_JS, arg=[before, 300], timeout=60_000, polling=50)
        samples.append(page.evaluate("() => (window.__paintedAt - window.__pressedAt) / 1000"))
    return samples


def cold_start_s(browser, server: AppServer):
    """Start `server` and open the landing page in a fresh browser context (empty cache): seconds until drawn.

    Returns the seconds and the page, still open, for more measurements on the same server.
    """
    from devtools.browser import IDLE_AND_CHANGED_JS, REPAINT_INIT_JS

    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.add_init_script(REPAINT_INIT_JS)
    t0 = time.perf_counter()
    server.start()
    page.goto(server.url + "/")
    page.wait_for_selector('[data-testid="stMain"] .vega-embed', timeout=120_000)
    page.wait_for_function(IDLE_AND_CHANGED_JS, arg=None, timeout=120_000, polling="raf")
    return time.perf_counter() - t0, page


def browser_side(repeats: int, cold_starts: int) -> dict:
    from playwright.sync_api import sync_playwright

    from devtools.browser import launch, settle

    out: dict = {"pages": []}
    floor_script = Path(tempfile.mkdtemp(prefix="bench-floor-")) / "floor.py"
    floor_script.write_text(FLOOR_PAGE)
    server = AppServer()
    with sync_playwright() as p:
        browser = launch(p)  # before the clock starts: the browser's own start-up is not the app's
        samples = []
        for _ in range(cold_starts - 1):  # each on a new server process and an empty browser cache
            extra = AppServer()
            try:
                seconds, page = cold_start_s(browser, extra)
                samples.append(seconds)
                page.context.close()
            finally:
                extra.stop()
        try:
            seconds, page = cold_start_s(browser, server)  # the last one: its server stays up for the pages
            samples.append(seconds)
            out["cold_start_s"] = round(statistics.median(samples), 2)
            out["cold_start_samples_s"] = [round(s, 2) for s in samples]
            out["server_ready_s"] = round(server.ready_after_s, 2)
            for rp in router_pages():
                page.goto(f"{server.url}/{rp.url_path}")
                settle(page)
                samples = slider_repaint(page, repeats)
                if samples is None:  # the exercise page has no slider
                    out["pages"].append({"page": rp.name, "repaint_ms": None, "repaint_first_ms": None})
                    continue
                out["pages"].append({"page": rp.name, "repaint_ms": median_ms(samples),
                                     "repaint_first_ms": median_ms(samples[:1])})
                print(f"  {rp.name:22s} slider-to-repaint {median_ms(samples):7.1f} ms"
                      f" (first step, cold caches: {median_ms(samples[:1]):7.1f} ms)", flush=True)
            out["rss_mb_after_all_pages"] = round(server.rss_mb(), 1)
        finally:
            server.stop()
        with AppServer(str(floor_script)) as floor:
            page.goto(floor.url + "/")
            settle(page)
            out["repaint_floor_ms"] = median_ms(slider_repaint(page, repeats))
        print(f"  floor (title, slider, one line of text) {out['repaint_floor_ms']:7.1f} ms", flush=True)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--cold-starts", type=int, default=3, help="cold starts measured (median reported)")
    ap.add_argument("--room-students", type=int, default=300,
                    help="students of the class round's room on two processes and PostgreSQL (0: skip it)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results.json"))
    args = ap.parse_args()

    speed = python_loop_s()
    print(f"Machine speed: a fixed pure-Python loop takes {speed} s (compare runs only alongside this)")
    print("Server-side reruns (AppTest with the server's bytecode cache, median of", args.repeats,
          "after one warm-up):")
    with server_like_script_cache():
        reruns = server_side(args.repeats)
    result = {"machine": {"python": sys.version.split()[0], "cpus": __import__("os").cpu_count(),
                          "platform": platform.platform(),
                          "python_loop_s": speed},
              "targets": TARGETS, "reruns": reruns}
    if not args.no_browser:
        print("Browser (headless Chromium):")
        result["browser"] = browser_side(args.repeats, max(1, args.cold_starts))
        print(f"  cold start to first page drawn: {result['browser']['cold_start_s']} s"
              f" (median of {result['browser']['cold_start_samples_s']});"
              f" server RSS after every page: {result['browser']['rss_mb_after_all_pages']} MB")

    from benchmarks import exercise_round

    result["exercise_round"] = exercise_round.measure()
    m = result["exercise_round"]["median"]["cpu_ms"]
    print(f"Recording a check in the exercise's class round (SQLite, 300 students x 3 checks): server CPU p50 "
          f"{m['p50']} ms, p95 {m['p95']} ms (budget {exercise_round.TARGET_CPU_MS:g} ms)")

    if args.room_students:
        from benchmarks import exercise_room

        print(f"The class round's room: {args.room_students} students pressing Check my code 3 times over 180 s, "
              "twice (no round, then a round open), on 2 processes behind nginx and PostgreSQL:", flush=True)
        result["exercise_room"] = exercise_room.measure(args.room_students, 3, 180.0)
        print("  " + exercise_room.report(result["exercise_room"]))

    print("\n| page | rerun default (ms) | rerun heaviest (ms) | bare page (ms) | ratio | repaint (ms) |"
          " repaint, first step (ms) |")
    print("|---|---|---|---|---|---|---|")
    browser_pages = result.get("browser", {}).get("pages", [])
    repaint = {r["page"]: r["repaint_ms"] for r in browser_pages}
    first = {r["page"]: r["repaint_first_ms"] for r in browser_pages}
    for r in result["reruns"]:
        print(f"| {r['page']} | {r['rerun_default_ms']} | {r['rerun_heaviest_ms']} | {r['bare_ms']} |"
              f" {r['ratio_default']} | {repaint.get(r['page'], '–')} | {first.get(r['page'], '–')} |")
    Path(args.out).write_text(json.dumps(result, indent=2))
    print("\nwritten to", args.out)


if __name__ == "__main__":
    main()
