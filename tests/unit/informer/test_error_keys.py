"""The routing key of a report on ``ksched.errors`` never echoes a made-up kind: a
255-byte routing key word (found by ``ops/fuzz --live``) made ``error.<kind>`` too long
to publish, so the informer's whole batch went back to the queue and its reports were
published again on every retry."""

from __future__ import annotations

import pytest

from contracts import topology
from contracts.kinds import KINDS


@pytest.mark.parametrize("kind", [*sorted(KINDS), "binding", "Pod", "gadget", "v1beta1"])
def test_a_plain_kind_word_names_the_key(kind: str) -> None:
    assert topology.error_key(kind) == f"error.{kind.lower()}"


@pytest.mark.parametrize(
    "kind", ["", "#", "*", "x" * 64, "x" * 255, "💥", "pod!", "pods-x", "ü", "a b", "\x00"]
)
def test_anything_else_is_unknown(kind: str) -> None:
    key = topology.error_key(kind)
    assert key == "error.unknown"


def test_every_key_fits_an_amqp_routing_key() -> None:
    for kind in ("x" * 63, "x" * 10_000, "💥" * 100):
        assert len(topology.error_key(kind).encode()) <= 255
