"""Placement versions: what a decision read, so that replicas commit only fresh decisions.

The store's ``assume`` checks resources atomically, but a decision also rests on the
pods around the node: required (anti-)affinity, topology spread, host ports,
ReadWriteOncePod claims, volumes. Two replicas deciding at once from snapshots that
lack each other's newest placements could together break what each respects alone. So
the store keeps a version per *domain*, raised by every placement in it:

- ``node:<name>``: the node itself (host ports, volumes, any key whose domain is the node);
- ``<key>=<value>``: each label of the node (a topology domain: ``zone=a``,
  ``kubernetes.io/hostname=n1``);
- ``claim:<namespace>/<name>``: a ReadWriteOncePod claim the pod uses;
- ``cluster``: every placement anywhere.

A :class:`~services.common.store.Reservation` *touches* every domain of its node (and
its claims) and *reads* the domains its decision depended on, with the version this
replica's snapshot reflects. The store refuses (``conflict``, with the current
versions) a reservation whose read domain moved on since: another replica placed a pod
there that this snapshot does not hold. The replica then brings its snapshot up to what
the store holds (:meth:`PlacementVersions.refreshed`) and schedules the pod again.

What makes it hold. ``known[d] == store[d]`` must mean that the snapshot holds every
placement the store counted in ``d``:

- *Read before the objects.* ``known`` is set only from versions read before the
  snapshot is brought up to the store: at load (versions, then the objects and the
  assumptions), after a conflict (the versions come with the refusal; then the store's
  assumptions are held and the log caught up to the applied seq read after them, so a
  pod bound in between is in one or the other).
- *Count only what happened.* A replica adds one per domain for each of its own
  placements the store committed, nothing else: versions only grow, so any placement
  of another replica leaves ``known`` behind and the next read of that domain is
  refused. Reservations of one ``assume`` call expect the touches of those before them
  in the call; the store refuses every later one that read a domain a refused one
  touched (``VOIDED``), so no expected touch is one that never happened (it could
  otherwise stand in for another replica's placement: issue 27), and no decision
  that counted a refused pod (a group it joined, a first pod of a group, a spread
  minimum) commits. A decision the refused pod only made stricter (anti-affinity,
  ports, volumes, resources) stands.
- *Hold until the store lets go.* A snapshot drops an assumption (its own or another
  replica's) only when the store no longer holds it live: some seconds past its
  deadline (``EXPIRY_GRACE``) the replica asks the store (``BatchScheduler.expire``),
  which keeps binding pods, and a binder never claims an assumption past its deadline
  (``begin_bind``). Replicas and binders read wall clocks; they must agree to within
  that grace.

A placement that never happens is another matter, for one replica as for upstream's
scheduler: a decision that counted an assumed pod whose Permit was then rejected,
whose binding failed or whose reservation expired before a binder claimed it
stands. Where the verdict only got stricter for that pod (anti-affinity, ports,
volumes, resources) nothing is lost; a spread minimum or a group it counted may not
hold in the end. Reservations expire only when no binder claims them for their TTL
(30 s): a binder down or far behind. Nor are pods bound outside ksched (published with
``spec.nodeName``) placements of a replica: they raise no version, and a decision taken
before the feed shows one races with it as upstream's races with another scheduler.
- *Know the keys.* The symmetric anti-affinity check reads the domains of the topology
  keys of every pod this replica has seen (``watched``). A reservation names those keys;
  the store refuses it when a pod with required anti-affinity on another key was placed
  (``AssumeResult.keys``): the replica adds them and, after the refresh, reads them too.

What a pod's decision reads (:meth:`PlacementVersions.reads`), constraint by constraint
(each one whose verdict another replica's placement can change):

- Host ports (NodePorts): the node. Every placement touches it.
- Node volume limits and disk conflicts (NodeVolumeLimits, VolumeRestrictions): the node,
  for a pod with a claim, an ephemeral, CSI or in-tree disk volume.
- ReadWriteOncePod (VolumeRestrictions): its claims' domains, which every placement of a
  pod using the claim touches.
- The pod's required anti-affinity terms: the node's domain of each term's topology key
  (a matching pod placed there moves it; one placed in another domain does not matter).
- Existing pods' required anti-affinity (the symmetric check): the node's domain of each
  key in ``watched``, and ``watched`` itself is checked by the store (above).
- The pod's required affinity terms: the node's domain of each term's key. A matching pod
  placed since can only add to what satisfied them; the first pod of a group (no pod
  matched, it matches itself) reads ``cluster`` as well: another replica's first pod of
  the same group placed meanwhile in another domain would start a second group.
  Existing pods' required affinity is not a filter upstream (only anti-affinity is
  symmetric), so nothing to read.
- ``DoNotSchedule`` spread: the node's domain of each constraint's key. The skew is the
  chosen domain's count plus one minus the minimum: a placement in the chosen domain
  raises it (read), one elsewhere can only raise the minimum. Only a pod taken away
  lowers it: one reserved before it in the same call and refused, so it also reads
  the domains of those pods' nodes (the store voids it with them). ``minDomains`` (fewer
  eligible domains than it asks: the minimum is 0) and the node inclusion policies
  (which nodes' domains count) depend on nodes, not on placements.
- Resources and the pod count (NodeResourcesFit): checked by the store itself, for the
  resources the profile filters on.
- Taints, node affinity, node name, unschedulable nodes, volume zones and binding: read
  the node and the volumes, never another pod; nothing to guard.
- Nominated pods (preemption): nominations are not placements. Two replicas never
  nominate two pods into the same room (``claim_nominations`` is atomic); a pod another
  replica places meanwhile into room promised to a preemptor breaks no constraint of the
  final state, the preemptor is scheduled again (and may preempt again), as upstream's
  own assumed pods may take a nominated pod's room between two cycles.
- Coscheduling quorum: not a placement constraint (the checker does not judge it).
  Permit counts the members bound, assumed or waiting at Permit on any replica (the
  store's waiting pods, shared by every replica and binder), as upstream's
  ``CalculateAssignedPods`` counts its assumed pods; another replica's placement can
  only add to that count, and each waiting member is allowed or rejected once, by an
  atomic step of the store.

A pod that reads nothing (no such constraints anywhere) is never refused for a
domain, and one replica alone never is: it knows its own placements. Every placement
touches, whatever it read, because another replica may read what it did not.
``services.framework.verify`` judges a final state against all of these at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from contracts.k8s import Node, Pod
from services.framework.api.listers import Listers

DO_NOT_SCHEDULE = "DoNotSchedule"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


CLUSTER = "cluster"
"""The domain every placement touches (read by first-of-group decisions only)."""


def node_domain(node: str) -> str:
    return f"node:{node}"


def label_domain(key: str, value: str) -> str:
    return f"{key}={value}"


def claim_domain(namespace: str, name: str) -> str:
    return f"claim:{namespace}/{name}"


def pod_topology_keys(pod: Pod) -> set[str]:
    """The topology keys the pod's own hard constraints read."""
    keys: set[str] = set()
    affinity = pod.spec.affinity
    if affinity is not None:
        for group in (affinity.pod_affinity, affinity.pod_anti_affinity):
            if group is not None:
                keys.update(
                    t.topology_key
                    for t in group.required_during_scheduling_ignored_during_execution
                )
    keys.update(
        c.topology_key
        for c in pod.spec.topology_spread_constraints
        if c.when_unsatisfiable == DO_NOT_SCHEDULE
    )
    keys.discard("")
    return keys


def spread_keys(pod: Pod) -> set[str]:
    """The topology keys of the pod's ``DoNotSchedule`` spread constraints."""
    return {
        c.topology_key
        for c in pod.spec.topology_spread_constraints
        if c.when_unsatisfiable == DO_NOT_SCHEDULE and c.topology_key
    }


def anti_affinity_keys(pod: Pod) -> Iterable[str]:
    """The topology keys of the pod's required anti-affinity terms."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.pod_anti_affinity is None:
        return ()
    terms = affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    return (t.topology_key for t in terms if t.topology_key)


def uses_host_ports(pod: Pod) -> bool:
    return any(
        port.host_port
        for containers in (pod.spec.containers, pod.spec.init_containers)
        for container in containers
        for port in container.ports
    )


def uses_node_volumes(pod: Pod) -> bool:
    """Whether the pod has a volume the node counts or shares out: attachable volumes
    (NodeVolumeLimits: claims, ephemeral, CSI, in-tree disks) or disks two pods on one
    node may not both mount (VolumeRestrictions)."""
    return any(
        v.persistent_volume_claim is not None
        or v.ephemeral is not None
        or v.csi is not None
        or v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.azure_disk is not None
        or v.rbd is not None
        or v.iscsi is not None
        for v in pod.spec.volumes
    )


def exclusive_claims(pod: Pod, listers: Listers) -> list[str]:
    """The domains of the pod's ReadWriteOncePod claims (as the lister knows them)."""
    namespace = pod.metadata.namespace or "default"
    domains = []
    for volume in pod.spec.volumes:
        source = volume.persistent_volume_claim
        if source is None:
            continue
        claim = listers.claim(namespace, source.claim_name)
        if claim is not None and READ_WRITE_ONCE_POD in claim.spec.access_modes:
            domains.append(claim_domain(namespace, source.claim_name))
    return domains


@dataclass(slots=True)
class PlacementVersions:
    """This replica's knowledge of the store's domain versions: ``known[d] = v`` means
    its snapshot holds every placement the store counted in ``d`` up to ``v`` (missing:
    0). It only ever claims less than it holds: its own placements raise ``known`` by
    one each (another replica's placement meanwhile makes that stale, which the next
    read of the domain finds out)."""

    known: dict[str, int] = field(default_factory=dict)
    watched: set[str] = field(default_factory=set)
    """Topology keys of the required anti-affinity of every pod this replica has seen
    (grows only: a conservative read set)."""

    def load(self, versions: Mapping[str, int], pods: Iterable[Pod]) -> None:
        """Start from the store's versions (read *before* the objects they cover)."""
        self.known = dict(versions)
        self.watched = set()
        self.watch(pods)

    def watch(self, pods: Iterable[Pod]) -> None:
        for pod in pods:
            if pod.spec.affinity is not None:
                self.watched.update(anti_affinity_keys(pod))

    def reads(
        self,
        pod: Pod,
        node: Node,
        listers: Listers,
        *,
        first_of_group: bool = False,
        before: Iterable[Node] = (),
    ) -> list[str]:
        """The domains the decision to place ``pod`` on ``node`` depended on;
        ``first_of_group``: its required pod affinity was waived (see the module);
        ``before``: the nodes of the pods reserved before it in the same store call
        (each in its snapshot: one refused would lower a spread minimum it counted)."""
        labels = node.metadata.labels
        read = {
            label_domain(key, labels[key])
            for key in (pod_topology_keys(pod) | self.watched) & labels.keys()
        }
        spread = spread_keys(pod)
        for other in before if spread else ():
            theirs = other.metadata.labels
            read.update(label_domain(key, theirs[key]) for key in spread & theirs.keys())
        domains = sorted(d for d in read if "\n" not in d)
        if uses_host_ports(pod) or uses_node_volumes(pod):
            domains.append(node_domain(node.metadata.name))
        domains += exclusive_claims(pod, listers)
        if first_of_group:
            domains.append(CLUSTER)
        return domains

    @staticmethod
    def touches(pod: Pod, node: Node, listers: Listers) -> tuple[str, ...]:
        """Every domain a placement of ``pod`` on ``node`` changes."""
        labels = node.metadata.labels
        return (
            node_domain(node.metadata.name),
            *(label_domain(k, v) for k, v in labels.items() if "\n" not in k + v),
            *exclusive_claims(pod, listers),
            CLUSTER,
        )

    def expected(self, domains: Iterable[str], pending: Mapping[str, int]) -> dict[str, int]:
        """The versions to expect for ``domains``, counting ``pending`` placements of
        the same store call before this one."""
        known = self.known
        return {d: known.get(d, 0) + pending.get(d, 0) for d in domains}

    def call(
        self, placements: Sequence[tuple[Pod, Node | None, bool]], listers: Listers
    ) -> list[tuple[dict[str, int], tuple[str, ...]]]:
        """For each placement of one store call, in order (pod, node — None when the
        snapshot lost it — and whether it was placed as the first of its group): the
        domains its decision read, at the versions to expect (counting the touches of
        the placements before it in the call), and the domains it touches."""
        ahead: dict[str, int] = {}
        before: list[Node] = []
        out: list[tuple[dict[str, int], tuple[str, ...]]] = []
        for pod, node, first in placements:
            if node is None:
                out.append(({}, ()))
                continue
            read = self.reads(pod, node, listers, first_of_group=first, before=before)
            touches = self.touches(pod, node, listers)
            out.append((self.expected(read, ahead), touches))
            for domain in touches:
                ahead[domain] = ahead.get(domain, 0) + 1
            before.append(node)
        return out

    def placed(self, touches: Iterable[str]) -> None:
        """One of this replica's placements was committed."""
        known = self.known
        for d in touches:
            known[d] = known.get(d, 0) + 1

    def refreshed(self, versions: Mapping[str, int]) -> None:
        """The snapshot now holds what the store counted in ``versions``."""
        self.known.update(versions)
