"""Gather what :mod:`.checks` judges: the client's Bindings, the store and the event log."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common.store.redis import RedisStore
from services.framework.verify import store_violations
from tests.chaos.checks import Observed
from tests.chaos.workload import REQUESTS, Workload

KINDS = ("node", "pod")


@dataclass(frozen=True, slots=True)
class LogContents:
    seq: int
    """The last entry's."""
    objects: dict[tuple[str, str], Any]
    """(kind, uid) → the object's last state (deleted ones left out)."""
    bindings: Counter[str]
    """Pod → how many binding entries."""
    repeats: list[str]
    """An entry per object that left it as it was (a duplicate recorded): ``kind uid @seq``."""


def read_log(path: Path) -> LogContents:
    """The event log file, folded. A torn last line (a kill -9 mid-write) is skipped, as
    the informer does when it opens the log."""
    with path.open("rb") as file:
        return fold(file)


def fold(raw_entries: Iterable[bytes]) -> LogContents:
    """Log entries (JSON, in log order), folded; one that is not JSON is skipped."""
    objects: dict[tuple[str, str], Any] = {}
    bindings: Counter[str] = Counter()
    repeats: list[str] = []
    seq = 0
    for raw in raw_entries:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        seq = entry["seq"]
        obj, kind = entry["object"], entry["kind"]
        key = (kind, obj["metadata"]["uid"])
        if entry["type"] == "DELETED":
            objects.pop(key, None)
        else:
            if objects.get(key) == obj:
                repeats.append(f"{kind} {key[1]} @{seq}")
            objects[key] = obj
        if kind == "pod" and entry.get("origin") == "binding":
            bindings[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] += 1
    return LogContents(seq, objects, bindings, repeats)


async def read_store(store: RedisStore, kinds: set[str]) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for kind in kinds:
        for body in (await store.objects(kind)).values():
            obj = json.loads(body)
            out[(kind, obj["metadata"]["uid"])] = obj
    return out


async def observe(
    workload: Workload,
    decisions: dict[str, list[str]],
    store: RedisStore,
    log: Path | LogContents,
    crashed: Sequence[str],
) -> Observed:
    """What the checks judge; ``log``: the event log file, or a log read already."""
    contents = read_log(log) if isinstance(log, Path) else log
    store_objects = await read_store(store, {*KINDS, *(kind for kind, _ in contents.objects)})
    placed = {
        f"{obj['metadata']['namespace']}/{obj['metadata']['name']}": obj["spec"]["nodeName"]
        for (kind, _), obj in store_objects.items()
        if kind == "pod" and obj.get("spec", {}).get("nodeName")
    }
    allocatable = {n["metadata"]["name"]: dict(workload.allocatable) for n in workload.nodes}
    return Observed(
        pods=workload.pod_keys(),
        decisions=decisions,
        placed=placed,
        log_bindings=contents.bindings,
        log_repeats=contents.repeats,
        requests=REQUESTS,
        allocatable=allocatable,
        reservations=sorted(await store.assumed()),
        leases=sorted(await store.leases()),
        waiting=sorted(await store.waiting()),
        log_objects=contents.objects,
        store_objects=store_objects,
        log_seq=contents.seq,
        store_seq=await store.applied_seq(),
        crashed=crashed,
        violations=[str(v) for v in await store_violations(store)],
    )
