"""Wrong presenter keys: free at first, then a growing wait, then a lock-out; per client; on an injected clock."""

from __future__ import annotations

import pytest

from poll import (
    MalformedInputError,
    PresenterKey,
    PresenterKeyGuard,
    PresenterKeyThrottledError,
    ThrottlePolicy,
    WrongPresenterKeyError,
)

KEY = "correct-horse-battery-staple"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def guard(clock) -> PresenterKeyGuard:
    return PresenterKeyGuard(PresenterKey(KEY, "secrets"), ThrottlePolicy(), clock=clock)


def wrong(guard, client="browser-1") -> float:
    with pytest.raises(WrongPresenterKeyError, match="not the presenter key") as refused:
        guard.check(client, "a wrong guess")
    return refused.value.retry_after_s


def test_the_right_key_passes(guard):
    guard.check("browser-1", KEY)


def test_waits_grow_after_the_free_tries_then_lock_out_at_ten_in_a_row(guard, clock):
    waits = []
    for _ in range(10):
        waits.append(wrong(guard))
        clock.now += waits[-1]
    assert waits == [0, 0, 0, 2, 4, 8, 16, 32, 60, 900]
    wrong(guard)  # the eleventh in a row after its wait: locked out again
    with pytest.raises(PresenterKeyThrottledError, match="15 minutes"):
        guard.check("browser-1", KEY)


def test_while_waiting_even_the_right_key_is_not_checked(guard, clock):
    for _ in range(4):
        wrong(guard)
    with pytest.raises(PresenterKeyThrottledError, match="try again in 2 seconds") as throttled:
        guard.check("browser-1", KEY)
    assert throttled.value.retry_after_s == 2
    clock.now += 1.5
    with pytest.raises(PresenterKeyThrottledError):
        guard.check("browser-1", KEY)
    clock.now += 0.5
    guard.check("browser-1", KEY)


def test_the_right_key_clears_the_clients_record(guard, clock):
    for _ in range(3):
        wrong(guard)
    guard.check("browser-1", KEY)
    assert [wrong(guard) for _ in range(3)] == [0, 0, 0]


def test_one_clients_wrong_keys_do_not_slow_another(guard, clock):
    for _ in range(10):
        clock.now += wrong(guard, "attacker")
    clock.now -= 1
    with pytest.raises(PresenterKeyThrottledError):
        guard.check("attacker", KEY)
    guard.check("lecturer", KEY)


def test_records_beyond_the_cap_are_dropped_only_for_clients_not_waiting(clock):
    policy = ThrottlePolicy(free_tries=0, first_delay_s=100)
    guard = PresenterKeyGuard(PresenterKey(KEY, "secrets"), policy, clock=clock, max_clients=2)
    wrong(guard, "done-1")
    wrong(guard, "done-2")
    clock.now += 150
    wrong(guard, "waiting")
    assert set(guard._records) == {"waiting"}
    with pytest.raises(PresenterKeyThrottledError):
        guard.check("waiting", KEY)


def test_a_malformed_client_name_is_refused(guard):
    with pytest.raises(MalformedInputError, match="client"):
        guard.check("x" * 201, KEY)


def test_the_wait_left_is_told_without_a_try(guard, clock):
    assert guard.wait_s("browser-1") == 0.0
    for _ in range(4):
        wrong(guard)
    assert guard.wait_s("browser-1") == pytest.approx(2.0) and guard.wait_s("browser-2") == 0.0
    clock.now += 1.5
    assert guard.wait_s("browser-1") == pytest.approx(0.5)
    clock.now += 1.0
    assert guard.wait_s("browser-1") == 0.0


def test_a_wait_is_told_in_whole_seconds_then_minutes_never_less_than_it_is():
    from poll.key_guard import wait_text

    assert [wait_text(s) for s in (0.2, 1.0, 1.5, 120.0, 121.0, 900.0)] == [
        "1 second", "1 second", "2 seconds", "120 seconds", "3 minutes", "15 minutes"]
