"""The checker of a final state: every hard constraint a bound pod breaks.

Given the cluster as the store finally holds it (nodes, pods, the listers' objects),
:func:`violations` re-runs the profile's own PreFilter and Filter plugins for every
bound pod against its node, with every other bound pod in place: the pod is taken
out of the Cache, judged as if it were being scheduled onto the node it holds, and
put back. That is upstream's filters as a judge of the whole state, so what it
checks is what the profile filters on: resources and pod count (NodeResourcesFit),
host ports (NodePorts), required pod affinity and anti-affinity in both directions
(InterPodAffinity), ``DoNotSchedule`` spread with minDomains and the node inclusion
policies (PodTopologySpread), taints (TaintToleration), node affinity and selectors
(NodeAffinity), node name, cordons, volume restrictions, limits, binding and zones,
and DRA claims (DynamicResources' Filter; besides, no device may be allocated to two
claims, unless each holds a share of a device that allows multiple allocations and the
shares' summed ``consumedCapacity`` fits the device's capacity).

Only plugins that have a Filter judge: a PreFilter of a plugin without one (the
Coscheduling group's admission) is a check on the attempt, not on a placement.
A pod is judged by the profile of its ``schedulerName`` (the first profile when none
matches: a pod placed by someone else is held to the default rules). A pod bound to
a node the cluster does not have is a violation of its own.

The verdict is the state's, not the history's: what upstream lets change after a pod
is bound (``IgnoredDuringExecution``: a taint or label added later, a node cordoned)
is reported too, so callers judge a state that had no such change (a scheduling run).
A state reached by correct decisions, with no pod removed since, has no violation
where the later pods had to respect the earlier ones: resources, ports, claims and
anti-affinity are checked both ways, and a required affinity stays met as pods are
added. Spread is the exception upstream makes: only the incoming pod's constraints
are checked, never those of the pods already placed. So the final state keeps a
spread constraint for the pods that share it with every pod its selector counts (a
Deployment's pods, the usual case, where the minimum only rises); pods of one
selector with different constraints (another maxSkew or minDomains) can reach, one
correct decision at a time, a state in which the stricter ones are reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import msgspec
import numpy as np

from contracts.k8s import TERMINAL_PHASES, Node, Pod, ResourceClaim, namespaced_name
from contracts.k8s.resource import Device, DeviceRequestAllocationResult, ResourceSlice
from contracts.quantity import format_quantity
from services.common.resources import ResourceError
from services.common.store import ClusterStore
from services.framework.api.interface import CycleState, FilterPlugin, PreFilterPlugin
from services.framework.api.listers import KINDS as LISTED_KINDS
from services.framework.api.status import StatusError
from services.framework.api.types import PodInfo
from services.framework.cache.cache import Cache
from services.framework.config import Profile, default_profile
from services.framework.config.in_tree import in_tree_registry
from services.framework.plugins.dynamicresources.allocator import device_id
from services.framework.plugins.dynamicresources.allocator.capacity import amount, qualify
from services.framework.runtime import filtering
from services.framework.runtime.framework import Framework


@dataclass(frozen=True, slots=True, order=True)
class Violation:
    """A bound pod its node should not hold: ``plugin`` (the Filter that rejects it,
    empty for a node the cluster lacks) and its reasons."""

    pod: str
    """``namespace/name``."""
    node: str
    plugin: str
    reason: str

    def __str__(self) -> str:
        by = f"{self.plugin}: " if self.plugin else ""
        return f"{self.pod} on {self.node}: {by}{self.reason}"


@dataclass(frozen=True, slots=True)
class _Judge:
    """A profile's plugins that judge placements."""

    pre_filters: Sequence[PreFilterPlugin]
    filters: Sequence[FilterPlugin]

    @classmethod
    def of(cls, framework: Framework) -> _Judge:
        filters = framework.filter_plugins
        names = {p.name for p in filters}
        return cls([p for p in framework.pre_filter_plugins if p.name in names], filters)

    def verdict(self, pod: PodInfo, node: str, cache: Cache) -> tuple[str, str] | None:
        """(plugin, reason) if ``pod`` may not go to ``node`` of ``cache`` now."""
        nodes = cache.snapshot()
        row = nodes.index.get(node)
        if row is None:
            return "", "the node is not in the cluster"
        state = CycleState()
        try:
            narrowed, status, plugins = filtering.run_pre_filter_plugins(
                self.pre_filters, state, pod, nodes
            )
            if not status.is_success():
                return status.plugin or " ".join(sorted(plugins)), status.message()
            if narrowed.node_names is not None and node not in narrowed.node_names:
                return " ".join(sorted(plugins)), "the node is not among the PreFilter's nodes"
            view = nodes.with_pods([row], {})
            verdicts = filtering.run_filter_plugins(
                self.filters, state, pod, view, np.ones(1, np.bool_)
            )
        except StatusError as err:
            return "", f"the filters failed: {err.status.message()}"
        rejection = filtering.status_of(verdicts, self.filters, 0)
        if rejection is None:
            return None
        return rejection.plugin or "", rejection.message()


def violations(
    nodes: Iterable[Node],
    pods: Iterable[Pod],
    objects: Mapping[str, Iterable[object]] | None = None,
    profiles: Sequence[Profile] | None = None,
) -> list[Violation]:
    """Every hard constraint a bound pod breaks in the cluster of ``nodes``, ``pods``
    and ``objects`` (listers' kind → objects: claims, volumes, namespaces, …), judged
    by ``profiles`` (default: the default profile); sorted, empty when none."""
    encode = msgspec.json.encode
    others = {
        kind: {str(i): encode(o) for i, o in enumerate(items)}
        for kind, items in (objects or {}).items()
    }
    return _judge_all(
        {n.metadata.name: encode(n) for n in nodes},
        {str(i): encode(p) for i, p in enumerate(pods)},
        others,
        profiles,
    )


async def store_violations(
    store: ClusterStore, profiles: Sequence[Profile] | None = None
) -> list[Violation]:
    """:func:`violations` of the cluster the store holds (its projection of the log)."""
    nodes = await store.objects("node")
    pods = await store.objects("pod")
    others = {kind: await store.objects(kind) for kind in LISTED_KINDS}
    return _judge_all(nodes, pods, others, profiles)


def _judge_all(
    nodes: Mapping[str, bytes],
    pods: Mapping[str, bytes],
    others: Mapping[str, Mapping[str, bytes]],
    profiles: Sequence[Profile] | None,
) -> list[Violation]:
    cache = Cache()
    by_uid = cache.load(nodes, pods, 0, others)
    judges = {
        p.scheduler_name: _Judge.of(Framework(p, in_tree_registry(), listers=cache.listers))
        for p in profiles or (default_profile(),)
    }
    fallback = next(iter(judges.values()))
    found = []
    for uid, pod in by_uid.items():
        node = pod.spec.node_name
        if not node or pod.status.phase in TERMINAL_PHASES:
            continue
        key = namespaced_name(pod.metadata)
        try:
            info = PodInfo.of(pod)
        except ResourceError as err:
            found.append(Violation(key, node, "", f"invalid requests: {err}"))
            continue
        judge = judges.get(pod.spec.scheduler_name, fallback)
        cache.remove_pod(uid)
        try:
            verdict = judge.verdict(info, node, cache)
        finally:
            cache.add_pod(pod)
        if verdict is not None:
            found.append(Violation(key, node, *verdict))
    listers = cache.listers
    found += _devices_given_twice(
        listers.resource_claims.values(), listers.resource_slices.values()
    )
    return sorted(found)


def _devices_given_twice(
    claims: Iterable[ResourceClaim], slices: Iterable[ResourceSlice]
) -> list[Violation]:
    """DRA: a device allocated to two claims (admin access aside, which may share a
    device in use): each later claim is a violation of its own (``pod`` names the
    claim, ``node`` the device). Shares (results with a ``shareID``) may meet on a
    device that allows multiple allocations while their summed ``consumedCapacity``
    fits each capacity the device publishes; the claim whose share passes it is the
    violation, as is a share of a device taken whole or not shareable."""
    devices = {
        device_id(s.spec.driver, s.spec.pool.name, d.name): d
        for s in slices
        for d in s.spec.devices
    }
    holder: dict[str, str] = {}
    sharers: dict[str, str] = {}
    summed: dict[str, dict[str, Fraction]] = {}
    found = []
    for claim in sorted(claims, key=lambda c: namespaced_name(c.metadata)):
        allocation = claim.status.allocation
        if allocation is None:
            continue
        key = namespaced_name(claim.metadata)
        for result in allocation.devices.results:
            if result.admin_access:
                continue
            device = device_id(result.driver, result.pool, result.device)
            if result.share_id is None:
                first = holder.setdefault(device, key)
                other = first if first != key else sharers.get(device)
            else:
                sharers.setdefault(device, key)
                other = holder.get(device)
                if other is None:
                    reason = _share_problem(devices.get(device), result, summed, device)
                    if reason is not None:
                        found.append(Violation(f"claim {key}", device, _DRA, reason))
                    continue
            if other is not None and other != key:
                reason = f"device {device} is also allocated to claim {other}"
                found.append(Violation(f"claim {key}", device, _DRA, reason))
    return found


_DRA = "DynamicResources"


def _share_problem(
    device: Device | None,
    result: DeviceRequestAllocationResult,
    summed: dict[str, dict[str, Fraction]],
    name: str,
) -> str | None:
    """Adds the share's consumption to the device's; what is wrong, if anything (a
    device no slice publishes any longer is not judged)."""
    if device is None:
        return None
    if not device.allow_multiple_allocations:
        return f"device {name} does not allow multiple allocations but is shared"
    totals = summed.setdefault(name, {})
    capacity = {qualify(n, result.driver): c for n, c in device.capacity.items()}
    problem = None
    for capacity_name, value in result.consumed_capacity.items():
        qualified = qualify(capacity_name, result.driver)
        totals[qualified] = totals.get(qualified, Fraction(0)) + amount(value)
        published = capacity.get(qualified)
        if published is None:
            problem = problem or f"device {name} has no capacity {capacity_name}"
        elif totals[qualified] > amount(published.value):
            problem = problem or (
                f"device {name}: the shares consume {format_quantity(totals[qualified])} "
                f"of capacity {capacity_name}, more than its {published.value}"
            )
    return problem


__all__ = ["Violation", "store_violations", "violations"]
