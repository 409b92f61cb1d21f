"""Objects lent to one run at a time (`ui.lending`): built once per key, never held by two runs at once, bounded."""

from __future__ import annotations

import threading
import time

from ui.lending import Lender, lender


def test_an_object_is_built_once_per_key_and_lent_again():
    built = []

    def build(n: int, *, kind: str = "a") -> list:
        built.append((n, kind))
        return [n, kind]

    pool = Lender(build)
    with pool.borrow(1) as first:
        first.append("changed by its borrower")
    with pool.borrow(1) as again, pool.borrow(2, kind="b") as other:
        assert again is first and other == [2, "b"]
    assert built == [(1, "a"), (2, "b")]


def test_a_lent_object_waits_for_its_borrower_to_return_it():
    pool = Lender(lambda key: {"holders": 0, "most": 0})
    errors = []

    def borrow() -> None:
        try:
            for _ in range(20):
                with pool.borrow("layer") as obj:
                    obj["holders"] += 1
                    obj["most"] = max(obj["most"], obj["holders"])
                    time.sleep(0.001)
                    obj["holders"] -= 1
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=borrow) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with pool.borrow("layer") as obj:
        assert not errors and obj["most"] == 1


def test_the_objects_kept_are_bounded_the_least_recently_lent_first_out():
    pool = Lender(lambda n: object(), max_entries=2)
    with pool.borrow(1) as one:
        pass
    with pool.borrow(2), pool.borrow(1), pool.borrow(3):
        pass
    assert len(pool) == 2
    with pool.borrow(1) as again:
        assert again is one  # lent more recently than 2, which went
    with pool.borrow(2) as two:
        assert two is not None and len(pool) == 2


def test_a_function_has_one_lender_per_process():
    def build(n: int) -> int:
        return n

    assert lender(build) is lender(build)
    assert lender(build) is not lender(lambda n: n)
