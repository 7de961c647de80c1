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


@pytest.mark.parametrize(
    ("env", "flags", "group", "field", "expected"),
    [
        (
            {"HOME": "/home/u"},
            {},
            "informer",
            "event_log",
            "/home/u/.local/share/ksched/events.jsonl",
        ),
        (
            {"HOME": "/home/u", "XDG_DATA_HOME": "/data"},
            {},
            "informer",
            "event_log",
            "/data/ksched/events.jsonl",
        ),
        (  # the XDG spec: a relative XDG_DATA_HOME is invalid and ignored
            {"HOME": "/home/u", "XDG_DATA_HOME": "data"},
            {},
            "informer",
            "event_log",
            "/home/u/.local/share/ksched/events.jsonl",
        ),
        ({"KSCHED_EVENT_LOG": "memory://"}, {}, "informer", "event_log", "memory://"),
        (
            {"KSCHED_EVENT_LOG": "a.jsonl"},
            {"event_log": "b.jsonl"},
            "informer",
            "event_log",
            "b.jsonl",
        ),
        ({}, {}, "queue", "max_in_flight", 512),
        ({}, {"max_in_flight": 7}, "queue", "max_in_flight", 7),
        ({}, {}, "queue", "dispatch_batch", 128),
        ({}, {}, "queue", "initial_backoff", 1.0),
        ({}, {}, "queue", "max_backoff", 10.0),
        ({}, {}, "scheduler", "assume_ttl", 30.0),
        ({}, {"seed": 3}, "scheduler", "seed", 3),
        ({}, {"replica": "r2"}, "scheduler", "replica", "r2"),
        ({}, {"explain": True}, "scheduler", "explain", True),
        ({}, {}, "restart", "cap", 30.0),
        ({}, {}, "informer", "snapshot_every", 50_000),
        ({"KSCHED_SNAPSHOT_EVERY": "7"}, {}, "informer", "snapshot_every", 7),
        ({"KSCHED_SNAPSHOT_INTERVAL": "2.5"}, {}, "informer", "snapshot_interval", 2.5),
        ({"KSCHED_LOG_RETENTION": "0"}, {}, "informer", "log_retention", 0),
        ({}, {}, "informer", "batch_wait", 0.025),
        ({"KSCHED_INFORMER_BATCH_WAIT": "0"}, {}, "informer", "batch_wait", 0.0),
        ({"KSCHED_INFORMER_BATCH_WAIT": "0.1"}, {}, "informer", "batch_wait", 0.1),
    ],
)
def test_each_setting_lands_in_its_service_group(
    env: dict[str, str], flags: dict[str, object], group: str, field: str, expected: object
) -> None:
    settings = from_env(env, **flags)
    assert getattr(getattr(settings, group), field) == expected


@pytest.mark.parametrize(
    ("flags", "where"),
    [
        ({"max_in_flight": "many"}, "$.queue.max_in_flight"),
        ({"seed": "x"}, "$.scheduler.seed"),
        ({"assume_ttl": "soon"}, "$.scheduler.assume_ttl"),
        ({"snapshot_every": "often"}, "$.informer.snapshot_every"),
        ({"log_retention": -1}, "log_retention (KSCHED_LOG_RETENTION) must not be negative"),
        ({"batch_wait": "soon"}, "$.informer.batch_wait"),
        (
            {"batch_wait": 2},
            "batch_wait (KSCHED_INFORMER_BATCH_WAIT): 2.0 is not a number of seconds from 0 to 1",
        ),
        (
            {"batch_wait": -0.5},
            "batch_wait (KSCHED_INFORMER_BATCH_WAIT): -0.5 is not a number of seconds from 0 to 1",
        ),
    ],
)
def test_a_bad_value_names_its_group_and_field(flags: dict[str, object], where: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=re.escape(where)):
        from_env({}, **flags)


def test_the_groups_are_immutable() -> None:
    settings = from_env({})
    with pytest.raises(AttributeError):
        settings.queue.max_in_flight = 1  # type: ignore[misc]
