"""``ops/fuzz --live`` in small: fuzzed watch events (malformed bodies, wrong content
types and headers, unknown routing keys) published with plain aio-pika to the four
services as processes. One report per invalid event naming the object and the field,
every valid event in the log and the store, no dead-lettered valid event, no service
exited, and a pod published after the burst bound within the bound."""

from __future__ import annotations

import pytest

from tests.fuzz.live import run_live
from tests.fuzz.run import cases

COUNT = 300


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(90)
async def test_a_live_fuzz_burst_hurts_no_one() -> None:
    result = await run_live(
        cases(COUNT, seed=8), seed=8, probe_within=30.0, settle_within=40.0, log_tails=False
    )
    summary = result.summary()
    assert result.ok, summary + "\n" + "\n".join(result.outcome.mismatched[:10])
    assert result.outcome.tried == COUNT
    assert result.outcome.rejected == result.reports == COUNT - result.outcome.valid
    assert result.outcome.recorded == result.outcome.valid > 0
    assert result.wire_variants > 0
    assert result.probe_latency is not None and result.probe_latency < 30.0
