"""The pods nominated to each node, for upstream's two-pass filter.

Upstream's scheduler asks its PodNominator (``NominatedPodsForNode``) for the pods that
preemption nominated to a node; ``RunFilterPluginsWithNominatedPods`` then filters a node
twice, once as if the nominated pods of equal or higher priority (not the pod itself)
ran there, once as it is (framework.filtering.nominated_pass).

Here the store holds the nominations (pod uid → node, priority) and the scheduler reads
them once per ScheduleBatch. A nomination names a pod that is still pending, and the
snapshot keeps only pods on nodes, so :class:`PendingPods` keeps the pending pods of
the cluster feed by uid: it is fed the same log entries as the snapshot and loaded from
the same store read. A :class:`PodInfo` is derived only for a pod that is nominated, and
kept until the pod changes.

A nominated pod stops counting on its node once it is bound or this replica assumed it
(upstream's ``DeleteNominatedPodIfExists`` on assume); one no longer pending, or not yet
seen on the feed, is ignored. Its priority is its own (``spec.priority``), compared with
the pod being scheduled exactly as upstream's ``addGENominatedPods`` compares them.

A batch's preemptions nominate pods too: :class:`BatchNominations` shows them to the
batch's later pods at once, and :func:`claim_nominations` records them in the store
(refused where another replica nominated a pod meanwhile).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from contracts.events import LogEntry, PodEntry
from contracts.k8s import TERMINAL_PHASES, Pod
from services.common.resources import ResourceError
from services.common.store import Assumed, ClusterStore, Nomination, NominationClaim
from services.framework.api.types import PodInfo, pod_uid
from services.framework.cache.cache import Cache
from services.framework.runtime.filtering import NominatedPods
from services.scheduler.outcome import BatchOutcome, Preempted

log = logging.getLogger("ksched.scheduler")


def is_pending(pod: Pod) -> bool:
    """Not on a node, not finished, not being deleted: a pod a nomination can name."""
    return (
        not pod.spec.node_name
        and pod.status.phase not in TERMINAL_PHASES
        and pod.metadata.deletion_timestamp is None
    )


class PendingPods:
    """Pending pods by uid, a projection of the log like the snapshot: the scheduler's
    LogProjection loads and feeds both (in seq order, each entry once)."""

    def __init__(self) -> None:
        self._pods: dict[str, Pod] = {}
        self._infos: dict[str, PodInfo | None] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def load(self, pods: Iterable[Pod]) -> None:
        """Replace everything with the store's pods."""
        self._pods = {pod_uid(p): p for p in pods if is_pending(p)}
        self._infos = {}

    def apply(self, events: Iterable[LogEntry]) -> None:
        """Apply log entries in seq order (the projection skips those already applied)."""
        for event in events:
            if not isinstance(event, PodEntry):
                continue
            uid = pod_uid(event.object)
            self._infos.pop(uid, None)
            if event.type != "DELETED" and is_pending(event.object):
                self._pods[uid] = event.object
            else:
                self._pods.pop(uid, None)

    def pod(self, uid: str) -> Pod | None:
        """The pending pod ``uid`` as this projection holds it (None: not pending)."""
        return self._pods.get(uid)

    def info(self, uid: str) -> PodInfo | None:
        """The pending pod's PodInfo (None if not pending, or its requests are invalid)."""
        if uid in self._infos:
            return self._infos[uid]
        pod = self._pods.get(uid)
        if pod is None:
            return None
        try:
            info: PodInfo | None = PodInfo.of(pod)
        except ResourceError as err:
            log.warning("pod %s has invalid requests: %s", uid, err)
            info = None
        self._infos[uid] = info
        return info


def nominated_pods(
    nominations: Mapping[str, Nomination], pending: PendingPods, snapshot: Cache
) -> NominatedPods | None:
    """Node name → the pods nominated to it, for ``Framework.schedule_pod``; None when
    no pending pod is nominated (the filter then runs once, as upstream's does)."""
    by_node: dict[str, list[PodInfo]] = {}
    for uid, nomination in nominations.items():
        info = pending.info(uid)
        if info is not None:
            by_node.setdefault(nomination.node, []).append(info)
    if not by_node:
        return None

    def for_node(name: str) -> Sequence[PodInfo]:
        pods = by_node.get(name)
        if not pods:
            return ()
        return [
            p for p in pods if snapshot.assumed_node(p.uid) is None and not snapshot.is_bound(p.uid)
        ]

    return NominatedPods(tuple(by_node), for_node)


def hold_assumptions(snapshot: Cache, pending: PendingPods, assumed: Mapping[str, Assumed]) -> None:
    """Count in ``snapshot`` the store's assumptions (any replica's) of pending pods it
    does not hold bound, at the store's node and deadline (``inf`` once binding)."""
    for uid, held in assumed.items():
        if snapshot.is_bound(uid) or snapshot.assumed(uid) == (held.node, held.deadline):
            continue
        info = pending.info(uid)
        if info is not None:
            snapshot.assume(info, held.node, held.deadline)


def with_nomination(pod: Pod, node: str) -> Pod:
    """``pod`` as it looks once its nomination is written (``status.nominatedNodeName``)."""
    status = msgspec.structs.replace(pod.status, nominated_node_name=node)
    return msgspec.structs.replace(pod, status=status)


@dataclass(frozen=True, slots=True)
class BatchNominations:
    """The nominations one batch of the scheduling cycle filters with: the store's
    (``store``: pod uid → its nomination, read for the batch) and those the batch's own
    preemptions make (``added``: node → the preemptors), which a later pod of the batch
    filters with, as upstream's nominator learns them at once: it does not take the room
    a preemptor before it was promised."""

    store: Mapping[str, Nomination]
    pods: NominatedPods
    """The pods nominated to each node, the store's and the batch's (what
    ``Framework.schedule_pod`` filters with)."""
    added: dict[str, list[PodInfo]]
    nodes: set[str]

    @classmethod
    def of(cls, store: Mapping[str, Nomination], base: NominatedPods | None) -> BatchNominations:
        """``store`` with ``base``, its pods per node (None: no pod nominated)."""
        nodes: set[str] = set(base.nodes) if base is not None else set()
        added: dict[str, list[PodInfo]] = {}

        def pods_for(name: str) -> Sequence[PodInfo]:
            known = base.pods_for(name) if base is not None else ()
            extra = added.get(name)
            return [*known, *extra] if extra else known

        return cls(store, NominatedPods(nodes, pods_for), added, nodes)

    def seen(self, node: str) -> frozenset[str]:
        """The pods nominated to ``node``, the store's and the batch's (what a claim saw)."""
        seen = {uid for uid, nomination in self.store.items() if nomination.node == node}
        seen.update(pod.uid for pod in self.added.get(node, ()))
        return frozenset(seen)

    def nominate(self, node: str, pod: PodInfo) -> None:
        """A preemption of this batch nominated ``pod`` to ``node``."""
        self.added.setdefault(node, []).append(PodInfo.of(with_nomination(pod.pod, node)))
        self.nodes.add(node)


async def claim_nominations(
    store: ClusterStore, outcome: BatchOutcome, start: int
) -> list[Preempted]:
    """Claim the nominations of ``outcome.preemptions[start:]`` in the store at once
    (every replica's next batch filters with them, before the queue records them too),
    with the lower-priority nominations each clears. A claim refused because another
    replica nominated a pod there meanwhile is taken out of the outcome (its preemption,
    its result) and returned."""
    fresh = outcome.preemptions[start:]
    if not fresh:
        return []
    lost = set(
        await store.claim_nominations(
            [
                NominationClaim(
                    p.preemptor.uid,
                    p.result.nominated_node_name or "",
                    p.preemptor.priority,
                    p.seen,
                    tuple(c.uid for c in p.result.cleared_nominations),
                )
                for p in fresh
            ]
        )
    )
    if not lost:
        return []
    outcome.nomination_conflicts += len(lost)
    refused = [p for p in fresh if p.preemptor.uid in lost]
    outcome.preemptions[start:] = [p for p in fresh if p.preemptor.uid not in lost]
    outcome.failures = [
        f for f in outcome.failures if not (f.request.uid in lost and f.result.nominated_node)
    ]
    return refused


__all__ = [
    "BatchNominations",
    "PendingPods",
    "claim_nominations",
    "hold_assumptions",
    "is_pending",
    "nominated_pods",
    "with_nomination",
]
