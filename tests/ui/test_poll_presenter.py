"""`ui.poll_presenter`: whom a presenter key is charged to (the panel itself, through AppTest:
tests/ui/test_class_poll.py)."""

from __future__ import annotations

import pytest

from ui import poll_presenter


class _Context:
    def __init__(self, ip_address: str | None, headers: dict[str, str]) -> None:
        self.ip_address, self.headers = ip_address, headers


@pytest.mark.parametrize(("ip_address", "forwarded", "client"), [
    ("203.0.113.7", "", "address 203.0.113.7"),
    ("203.0.113.7", "198.51.100.1", "address 203.0.113.7"),  # a client's own header is not believed
    (None, "198.51.100.1, 192.0.2.9", "address 192.0.2.9"),  # behind the proxy: the address it appended
    (None, "", "address this server"),
    ("10.0.0.1", "198.51.100.1, 192.0.2.9", "address 192.0.2.9"),  # nginx on another machine, trusted
    ("10.0.0.2", "198.51.100.1, 192.0.2.9", "address 10.0.0.2"),  # a machine not named as a proxy
], ids=["direct", "direct-forged", "proxied", "unknown", "trusted-proxy", "untrusted-peer"])
def test_a_presenter_client_is_its_address(ip_address, forwarded, client, monkeypatch):
    monkeypatch.setattr(poll_presenter.st, "context", _Context(ip_address, {"X-Forwarded-For": forwarded}))
    monkeypatch.setenv(poll_presenter.TRUSTED_PROXIES_ENV, "10.0.0.9, 10.0.0.1")
    assert poll_presenter.presenter_client() == client
