"""KSCHED_AMQP_URL as a list of a cluster's nodes: what is accepted, and the one-line
error naming the setting for what is not."""

from __future__ import annotations

import pytest

from services.common.brokers import broker_urls

A = "amqp://u:secret@node1:5672/v"
B = "amqp://u:secret@node2:5672/v"


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("amqp://guest:guest@127.0.0.1:5672/", ["amqp://guest:guest@127.0.0.1:5672/"]),
        (f"{A},{B}", [A, B]),
        (f" {A} , {B} ", [A, B]),
        (f"{A},amqp://u:secret@node1:5673/v", [A, "amqp://u:secret@node1:5673/v"]),
        ("amqps://u@n1/,amqps://u@n2/", ["amqps://u@n1/", "amqps://u@n2/"]),
    ],
    ids=["one-broker", "two-nodes", "spaces", "same-host-other-port", "tls"],
)
def test_accepted(value: str, urls: list[str]) -> None:
    assert broker_urls(value) == urls


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (f"{A},", "broker 2 of 2 is empty"),
        (f"{A},,{B}", "broker 2 of 3 is empty"),
        (f"{A},redis://node2/", "broker 2 of 2: not an amqp:// or amqps:// URL"),
        (f"{A},amqp:///v", "broker 2 of 2: no host"),
        (f"{A},amqp://u:secret@node2:99999/v", "broker 2 of 2: Port out of range"),
        (f"{A},{A}", "broker 2 of 2: node1:5672 is listed twice"),
        (f"{A},amqps://u:secret@node2/v", "another scheme than broker 1"),
        (f"{A},amqp://w:secret@node2/v", "another user than broker 1"),
        (f"{A},amqp://u:secret@node2/w", "another virtual host than broker 1"),
    ],
    ids=[
        "trailing-comma",
        "empty-middle",
        "not-amqp",
        "no-host",
        "bad-port",
        "repeated",
        "mixed-tls",
        "other-user",
        "other-vhost",
    ],
)
def test_refused_in_one_line_naming_the_setting(value: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        broker_urls(value)
    text = str(raised.value)
    assert text.startswith("amqp_url (KSCHED_AMQP_URL): ")
    assert message in text
    assert "\n" not in text and "secret" not in text
