"""What the Permit and gang integration tests read off a run: the pods waiting, the
pods that failed, and a report of a run that did not settle in time."""

from __future__ import annotations

from typing import Any

from services.common.store.redis import RedisStore
from tests.integration.harness import Client, Processes


def waiting(client: Client) -> dict[str, dict[str, Any]]:
    return {b["name"]: b for k, b, _ in client.decisions if k.startswith("waiting.")}


def failed(client: Client) -> dict[str, str]:
    return {
        e["involvedObject"]["name"]: e["message"] for e in client.events_with("FailedScheduling")
    }


async def not_settled(processes: Processes, client: Client, store: RedisStore) -> str:
    """What a run that did not settle in time did: bound, failed, waiting, assumed, and
    the scheduler's, binder's and queue's logs."""
    return (
        f"not settled: bound {sorted(client.bindings())}, failed {failed(client)}, "
        f"waiting {sorted(waiting(client))}, assumed {sorted(await store.assumed())}\n"
        + "\n".join(
            f"{key} {body.get('reason', body.get('kind'))} {_named(body)} "
            f"{body.get('node', '')} {headers.get('x-ksched-attempt', '')} "
            f"{str(body.get('message', ''))[:150]}"
            for key, body, headers in client.decisions
        )
        + "\n"
        + "\n".join(
            f"--- {n}:\n{processes.log(n)[-4000:]}"
            for n in ("queue", "scheduler", "scheduler-2", "binder", "binder-2")
        )
    )


def _named(body: dict[str, Any]) -> str:
    named = body.get("involvedObject") or body.get("metadata") or body
    return str(named.get("name"))
