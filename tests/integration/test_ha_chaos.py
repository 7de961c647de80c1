"""The HA chaos run in its short form (``ops/chaos --ha --short``), as CI runs it: a few
hundred pods through two replicas of every service on the local HA deployment (a
3-node RabbitMQ cluster, Redis with a replica and three Sentinels) while each role's
leader is killed, the RabbitMQ node leading the event log's stream is killed, Redis
fails over, and a second informer starts against the same log. It must exit 0 with
every row of its table ``ok``: nothing lost or bound twice, every seq once, and one
leader per role at the end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ops.ha.deployment import unavailable
from tests.integration.chaos_support import run_chaos

FAULTS = ("leader-kill", "rabbit-leader", "sentinel-failover", "second-informer")
LIMIT = 330.0
"""Seconds the short HA run may take: the cluster's start (about 20 s on 2 cores), ten
replicas starting, 30 s of publishing, the faults, settling, and every stop."""


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(LIMIT + 60)
async def test_the_short_ha_chaos_run_keeps_every_promise(tmp_path: Path) -> None:
    if why := unavailable():
        pytest.skip(f"the HA deployment cannot run here: {why}")
    args = ["--ha", "--short", "--faults", ",".join(FAULTS), "--workdir", str(tmp_path)]
    code, text = await run_chaos(*args, limit=LIMIT)
    at = text.find("\nfaults:")
    report = text[at + 1 :] if at >= 0 else text[-5000:]
    assert code == 0, f"ops/chaos --ha --short failed:\n{report}"
    assert "VIOLATION" not in report
    for fault in FAULTS:
        assert f"{fault} x1" in report, report
    assert re.search(r"^pods lost \(never bound\) +0  ok$", report, re.MULTILINE), report
    for role in ("informer", "queue", "descheduler"):
        assert re.search(rf"^{role}: exactly one leader at the end .* ok$", report, re.M), report
