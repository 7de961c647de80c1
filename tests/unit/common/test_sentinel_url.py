"""KSCHED_REDIS_URL with Sentinel: what parses into what, and the one line a wrong URL gets."""

from __future__ import annotations

import pytest

from services.common.settings import from_env
from services.common.store import open_store
from services.common.store.sentinel import (
    DEFAULT_REPLICA_WAIT,
    FailoverOptions,
    SentinelURL,
    parse_sentinel_url,
)

LOCAL = ("127.0.0.1", 26379)

PARSED = [
    (
        "redis+sentinel://127.0.0.1:26379/ksched",
        SentinelURL((LOCAL,), "ksched"),
    ),
    (
        "redis+sentinel://:s3cret@a:1,b:2,c:3/ksched/2",
        SentinelURL((("a", 1), ("b", 2), ("c", 3)), "ksched", 2, None, "s3cret"),
    ),
    (
        "REDISS+SENTINEL://user:p%40ss%2Fw@a/mymaster/0",
        SentinelURL((("a", 26379),), "mymaster", 0, "user", "p@ss/w", tls=True),
    ),
    (
        "redis+sentinel://[::1]:26380,[fe80::1]/svc",
        SentinelURL((("::1", 26380), ("fe80::1", 26379)), "svc"),
    ),
    ("redis+sentinel://user@h:1/svc", SentinelURL((("h", 1),), "svc", 0, "user", None)),
]


@pytest.mark.parametrize(("url", "expected"), PARSED, ids=[u for u, _ in PARSED])
def test_a_sentinel_url_parses(url: str, expected: SentinelURL) -> None:
    assert parse_sentinel_url(url) == expected


WRONG = [
    ("redis://h:1/svc", "scheme 'redis': expected redis+sentinel:// or rediss+sentinel://"),
    ("redis+sentinel://h:1", "service name: missing"),
    ("redis+sentinel://h:1/", "service name: missing"),
    ("redis+sentinel://h:1/svc/x", "database 'x': not a number >= 0"),
    ("redis+sentinel://h:1/svc/-1", "database '-1': not a number >= 0"),
    ("redis+sentinel://h:1/svc/0/more", "path '/svc/0/more': expected /SERVICE_NAME[/DB]"),
    ("redis+sentinel://h:1,/svc", "sentinel address: empty"),
    ("redis+sentinel://:pw@/svc", "sentinel address: empty"),
    ("redis+sentinel://h:x/svc", "sentinel address 'h:x': port 'x' is not 1-65535"),
    ("redis+sentinel://h:0/svc", "sentinel address 'h:0': port '0' is not 1-65535"),
    ("redis+sentinel://h:65536/svc", "port '65536' is not 1-65535"),
    ("redis+sentinel://h:/svc", "sentinel address 'h:': port '' is not 1-65535"),
    ("redis+sentinel://:1/svc", "sentinel address ':1': no host"),
    ("redis+sentinel://::1:26379/svc", "write an IPv6 address as [ADDR]:PORT"),
    ("redis+sentinel://[::1/svc", "sentinel address '[::1': expected [IPV6]:PORT"),
    ("redis+sentinel://[nope]:1/svc", "'nope' is no IPv6 address"),
    ("redis+sentinel://h:1/svc?db=1", "query 'db=1': not supported"),
    ("redis+sentinel://h:1/svc#x", "fragment 'x': not supported"),
]


@pytest.mark.parametrize(("url", "message"), WRONG, ids=[u for u, _ in WRONG])
def test_a_wrong_sentinel_url_names_the_part(url: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_sentinel_url(url)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "url", ["redis+sentinel://:hunter2@h:x/svc", "rediss+sentinel://:hunter2@h:1"]
)
def test_the_setting_is_named_and_the_password_never_shown(url: str) -> None:
    with pytest.raises(ValueError) as raised:
        from_env({"KSCHED_REDIS_URL": url})
    text = str(raised.value)
    assert text.startswith("redis_url (KSCHED_REDIS_URL): ")
    assert "hunter2" not in text


def test_open_store_names_the_url_without_its_password() -> None:
    with pytest.raises(ValueError) as raised:
        open_store("redis+sentinel://:hunter2@h:1/svc/db")
    assert str(raised.value) == (
        "store URL 'redis+sentinel://:***@h:1/svc/db': database 'db': not a number >= 0"
    )


@pytest.mark.parametrize(
    ("url", "option", "seconds"),
    [
        ("redis+sentinel://h/svc", None, DEFAULT_REPLICA_WAIT),
        ("rediss+sentinel://h/svc", None, DEFAULT_REPLICA_WAIT),
        ("redis://h:6379/0", None, 0.0),
        ("redis+sentinel://h/svc", 0.0, 0.0),
        ("redis://h:6379/0", 0.25, 0.25),
    ],
)
def test_the_replica_wait_is_on_by_default_under_sentinel_only(
    url: str, option: float | None, seconds: float
) -> None:
    assert FailoverOptions(replica_wait=option).wait_for(url) == seconds


def test_the_failover_settings_come_from_the_environment() -> None:
    settings = from_env(
        {
            "KSCHED_REDIS_URL": "redis+sentinel://h/svc",
            "KSCHED_REDIS_SENTINEL_PASSWORD": "sentinel-secret",
            "KSCHED_REDIS_REPLICA_WAIT": "0.5",
            "KSCHED_REDIS_FAILOVER_TIMEOUT": "12",
        }
    )
    assert settings.failover == FailoverOptions("sentinel-secret", 0.5, 12.0)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("KSCHED_REDIS_REPLICA_WAIT", "-1", "redis_replica_wait (KSCHED_REDIS_REPLICA_WAIT): -1.0"),
        ("KSCHED_REDIS_FAILOVER_TIMEOUT", "inf", "redis_failover_timeout"),
    ],
)
def test_a_wrong_failover_setting_is_named(variable: str, value: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        from_env({variable: value})
    assert message in str(raised.value)
