"""RabbitBus turns AMQP headers into text without ever raising: a header that is not
UTF-8 (any AMQP client can send one) once ended the informer's consumer for good."""

from __future__ import annotations

import pytest

from services.common.bus.rabbit_consume import _header_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(b"00-abc-01", "00-abc-01", id="utf-8 bytes"),
        pytest.param(b"caf\xc3\xa9", "café", id="multi-byte utf-8"),
        pytest.param(b"x\xff\xfe", "x\\xff\\xfe", id="not utf-8: kept as escapes"),
        pytest.param(7, "7", id="a number"),
        pytest.param("plain", "plain", id="a string"),
    ],
)
def test_headers_become_text(value: object, text: str) -> None:
    assert _header_text(value) == text
