"""The lecturer's download: every round of a page, one row per option, with its count and times."""

from __future__ import annotations

import csv
import io

from poll import new_browser_token, results_csv
from poll.export import COLUMNS
from tests.poll.conftest import question

PAGE = "masked_attention"


def test_every_round_and_option_with_its_count_and_times(store):
    hasher = store.voter_hasher()
    first = store.open_round(PAGE, question())
    for option in ("it grows", "it grows", "nothing"):
        store.vote(first.id, hasher.voter(new_browser_token()), option)
    first = store.lock(first.id)
    second = store.new_round(first.id)
    store.vote(second.id, hasher.voter(new_browser_token()), "it shrinks")
    second = store.reveal(second.id)
    rows = list(csv.DictReader(io.StringIO(results_csv(store, PAGE))))
    assert tuple(rows[0]) == COLUMNS and len(rows) == 6
    assert [(r["round"], r["option"], r["count"], r["correct"]) for r in rows] == [
        ("1", "it grows", "2", "False"), ("1", "it shrinks", "0", "True"), ("1", "nothing", "1", "False"),
        ("2", "it grows", "0", "False"), ("2", "it shrinks", "1", "True"), ("2", "nothing", "0", "False")]
    assert {r["question"] for r in rows} == {"What happens to the largest weight?"}
    assert {r["settings"] for r in rows} == {"d_k=64&scaled=true"}
    assert rows[0]["opened_at"] == first.opened_at.isoformat(timespec="seconds")
    assert rows[0]["locked_at"] == first.locked_at.isoformat(timespec="seconds") and rows[0]["revealed_at"] == ""
    assert rows[3]["revealed_at"] == second.revealed_at.isoformat(timespec="seconds") != ""


def test_a_page_never_polled_gives_the_header_alone(store):
    assert results_csv(store, PAGE) == ",".join(COLUMNS) + "\n"
