"""KEP-5501 on the real RabbitMQ and Redis: a pod PreEnqueue holds back gets its
PodScheduled condition on ``ksched.decisions`` (``status.<namespace>``) and a
``NotReadyForScheduling`` Event, 5 s after the queue first saw it, once."""

from __future__ import annotations

import time
from typing import Any

import pytest

from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes, node, pod

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GATES = "Scheduling is blocked due to non-empty scheduling gates"


def statuses(client: Client) -> list[tuple[str, dict[str, Any]]]:
    return [(key, body) for key, body, _ in client.decisions if key.startswith("status.")]


async def test_a_held_back_pod_gets_its_condition_and_event_after_5_s(
    cluster: tuple[Processes, Client, RedisStore],
) -> None:
    _processes, client, _store = cluster
    await client.publish("node", node("node-a"))
    held = pod("held")
    held["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    # What an earlier PreEnqueue rejection left on it: the queue's message is another.
    held["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "NotReadyForScheduling",
            "message": "waiting for the quota controller",
        }
    ]
    published = time.monotonic()
    await client.publish("pod", held)
    await client.wait_for(lambda: bool(statuses(client)), within=30)
    assert time.monotonic() - published >= 5.0
    [(key, patch)] = statuses(client)
    assert key == "status.e2e"
    assert patch["kind"] == "PodStatusPatch"
    assert (patch["namespace"], patch["name"], patch["uid"]) == ("e2e", "held", "uid-held")
    assert patch["plugin"] == "SchedulingGates"
    condition = patch["condition"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "NotReadyForScheduling",
    )
    assert condition["message"] == GATES and condition["lastTransitionTime"].endswith("Z")
    await client.wait_for(lambda: bool(client.events_with("NotReadyForScheduling")))
    [event] = client.events_with("NotReadyForScheduling")
    assert (event["involvedObject"]["uid"], event["message"]) == ("uid-held", GATES)
