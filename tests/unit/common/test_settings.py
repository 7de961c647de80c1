"""TLS settings: from the environment, checked once at the edge, one line per mistake."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from services.common.settings import from_env
from services.common.tls import TLSFiles, is_tls_url


def test_tls_files_come_from_the_environment(tmp_path: Path) -> None:
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "cert.pem", "key.pem"))
    for path in (ca, cert, key):
        path.write_text("x")
    settings = from_env(
        {"KSCHED_TLS_CA": str(ca), "KSCHED_TLS_CERT": str(cert), "KSCHED_TLS_KEY": str(key)}
    )
    assert settings.tls == TLSFiles(ca=str(ca), cert=str(cert), key=str(key))
    assert from_env({}).tls == TLSFiles()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KSCHED_TLS_CA": "/nonexistent/ca.pem"}, "tls_ca (KSCHED_TLS_CA): no such file"),
        ({"KSCHED_TLS_CERT": "/nonexistent/c.pem"}, "tls_cert (KSCHED_TLS_CERT): no such file"),
        ({"KSCHED_TLS_KEY": "{existing}"}, "tls_key (KSCHED_TLS_KEY) is set but tls_cert"),
    ],
)
def test_bad_tls_settings_are_one_line_naming_the_variable(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    existing = tmp_path / "key.pem"
    existing.write_text("x")
    env = {k: v.format(existing=existing) for k, v in env.items()}
    with pytest.raises(msgspec.ValidationError, match=re.escape(message)) as caught:
        from_env(env)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "tls"),
    [
        ("amqps://h/", True),
        ("AMQPS://h/", True),
        ("rediss://h:6380/0", True),
        ("amqp://h/", False),
        ("redis://h/0", False),
        ("memory://", False),
    ],
)
def test_is_tls_url(url: str, tls: bool) -> None:
    assert is_tls_url(url) is tls
