"""``ksched leases``: each role's leader lease as a table, or JSON with the keys the
HA tooling reads (role, holder, host, pid, token, renewed_at, expires_at)."""

from __future__ import annotations

import io
import json

from services.cli.leases import show
from services.common.store import LeaderLease

NOW = 1_700_000_000.0
LEASES = [
    LeaderLease("informer", "h1_abc", 1_700_000_000_000, 15, NOW - 60, NOW - 1, 2, "h1", 42),
    LeaderLease("queue", "", 7, 15, NOW - 90, NOW - 30, 1, "h2", 43),
]


def test_json_lists_every_role_with_the_shared_keys() -> None:
    out = io.StringIO()
    assert show(LEASES, now=NOW, output="json", out=out) == 0
    informer, queue = json.loads(out.getvalue())
    assert informer == {
        "role": "informer",
        "holder": "h1_abc",
        "host": "h1",
        "pid": 42,
        "token": 1_700_000_000_000,
        "renewed_at": "2023-11-14T22:13:19Z",
        "expires_at": "2023-11-14T22:13:34Z",
    }
    assert (queue["holder"], queue["expires_at"]) == ("", queue["renewed_at"])  # released


def test_the_table_shows_holder_token_and_time_left() -> None:
    out = io.StringIO()
    show(LEASES, now=NOW, output="table", out=out)
    header, informer, queue = out.getvalue().splitlines()
    assert header.split() == ["ROLE", "HOLDER", "HOST", "PID", "TOKEN", "RENEWED", "EXPIRES"]
    assert informer.split() == [
        *("informer", "h1_abc", "h1", "42", "1700000000000", "1.0s", "ago", "in", "14.0s")
    ]
    assert queue.split()[1] == "-" and queue.endswith("in -30.0s")  # released


def test_no_lease_says_so() -> None:
    out = io.StringIO()
    show([], now=NOW, output="table", out=out)
    assert "no role holds a leader lease" in out.getvalue()
