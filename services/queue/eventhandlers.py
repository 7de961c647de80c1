"""From log entries to queue calls: upstream's ``eventhandlers.go``.

A log entry carries only the new object, so the handlers keep the old objects the hints
need: nodes, assigned pods, volumes, claims and storage classes (pending pods are in the
queue). Per kind:

- Pod, pending and ours (no nodeName, one of our schedulerNames, not terminal, not
  being deleted): added, or updated (``PodSchedulingPropertiesChange`` on the old and
  new pod decides what the update may unblock). A nominatedNodeName that went away
  moves the lower-or-equal priority pods as an ``AssignedPodDelete``.
- Pod that becomes assigned: ``AssignedPodAdd``, and it leaves the queue (and the
  nominator). An assigned pod's update: its ``PodSchedulingPropertiesChange`` events;
  deleted or terminal (Succeeded/Failed): ``AssignedPodDelete``.
- Pod deleted (or terminal, being deleted, no longer ours) while pending: it leaves
  every sub-queue and the nominator.
- Node: ``NodeAdd``; on update each ``NodeSchedulingPropertiesChange`` event (none for a
  heartbeat); ``NodeDelete``.
- PersistentVolume, PersistentVolumeClaim, StorageClass: Add, Update, Delete.
- ResourceClaim, ResourceSlice: Add, Update, Delete; DeviceClass: Add, Update (upstream
  registers no DeviceClass deletion handler that matters to a plugin: none asks for it).
- A pod update whose ``status.resourceClaimStatuses`` changed (its claim was generated):
  ``UpdatePodGeneratedResourceClaim`` (see :mod:`services.queue.cluster_events`).
- PriorityClass: pods that take their priority from it are repositioned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from contracts.events import (
    DeviceClassEntry,
    EventType,
    LogEntry,
    NodeEntry,
    PersistentVolumeClaimEntry,
    PersistentVolumeEntry,
    PodEntry,
    PodGroupEntry,
    PriorityClassEntry,
    ResourceClaimEntry,
    ResourceSliceEntry,
    SchedulingPodGroupEntry,
    StorageClassEntry,
    WorkloadEntry,
)
from contracts.k8s import (
    TERMINAL_PHASES,
    DeviceClass,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceClaim,
    ResourceSlice,
    SchedulingPodGroup,
    StorageClass,
    namespaced_name,
)
from services.framework.api.events import ActionType, ClusterEvent, EventResource
from services.queue.cluster_events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    UNSCHEDULED_POD_ADD,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from services.queue.nominator import Nominator
from services.queue.priority import PriorityClasses
from services.queue.scheduling_queue import SchedulingQueue
from services.queue.types import QueueEntry

Volume = (
    PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | ResourceClaim
    | ResourceSlice
    | DeviceClass
)
"""The objects whose changes are plain Add/Update/Delete events (volumes and DRA's)."""
VOLUME_KINDS: dict[str, type[Volume]] = {
    "persistentvolume": PersistentVolume,
    "persistentvolumeclaim": PersistentVolumeClaim,
    "storageclass": StorageClass,
    "resourceclaim": ResourceClaim,
    "resourceslice": ResourceSlice,
    "deviceclass": DeviceClass,
}
"""Each kind of :data:`Volume` by its store name."""
_NAMESPACED_OBJECTS = (PersistentVolumeClaim, ResourceClaim)


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in TERMINAL_PHASES


def is_assigned(pod: Pod) -> bool:
    """Bound and not terminal: it holds room on its node (upstream's informer drops
    terminal pods, so they look deleted)."""
    return bool(pod.spec.node_name) and not is_terminal(pod)


@dataclass(slots=True)
class ClusterState:
    """Everything the handlers need to rebuild from (the store, after a restart or a
    gap in the log)."""

    pods: list[Pod] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    volumes: list[Volume] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    leases: Mapping[str, int] = field(default_factory=dict)
    """Pod uid → attempt number in flight when the previous queue stopped."""


class EventHandlers:
    def __init__(self, queue: SchedulingQueue, nominator: Nominator) -> None:
        self.queue = queue
        self.nominator = nominator
        self.classes = PriorityClasses()
        self.nodes: dict[str, Node] = {}
        self.assigned: dict[str, Pod] = {}
        """Assigned pods by uid: the old objects of AssignedPod events."""
        self._volumes: dict[EventResource, dict[str, Volume]] = {
            EventResource.PersistentVolume: {},
            EventResource.PersistentVolumeClaim: {},
            EventResource.StorageClass: {},
            EventResource.ResourceClaim: {},
            EventResource.ResourceSlice: {},
            EventResource.DeviceClass: {},
        }
        self._uids: dict[str, str] = {}
        """Pod ``namespace/name`` → uid: a pod re-created under its name is a new pod."""

    def pending(self, pod: Pod) -> bool:
        """Whether the queue schedules this pod."""
        return (
            not pod.spec.node_name
            and pod.spec.scheduler_name in self.queue.serves
            and not is_terminal(pod)
            and pod.metadata.deletion_timestamp is None
        )

    def handle(self, entry: LogEntry) -> None:
        match entry:
            case PodEntry(object=pod, type=type_):
                self.on_pod(type_, pod, order=entry.seq)
            case NodeEntry(object=node, type=type_):
                self.on_node(type_, node)
            case PersistentVolumeEntry(object=obj, type=type_):
                self.on_volume(EventResource.PersistentVolume, type_, obj)
            case PersistentVolumeClaimEntry(object=obj, type=type_):
                self.on_volume(EventResource.PersistentVolumeClaim, type_, obj)
            case StorageClassEntry(object=obj, type=type_):
                self.on_volume(EventResource.StorageClass, type_, obj)
            case ResourceClaimEntry(object=obj, type=type_):
                self.on_volume(EventResource.ResourceClaim, type_, obj)
            case ResourceSliceEntry(object=obj, type=type_):
                self.on_volume(EventResource.ResourceSlice, type_, obj)
            case DeviceClassEntry(object=obj, type=type_):
                self.on_volume(EventResource.DeviceClass, type_, obj)
            case PriorityClassEntry(object=priority_class, type=type_):
                self.on_priority_class(type_, priority_class)
            case PodGroupEntry(object=group, type=type_):
                self.on_pod_group(type_, group)
            case SchedulingPodGroupEntry() | WorkloadEntry():
                self.on_workload_object(entry)
                return
            case _:
                pass  # namespaces and PDBs move no pod
        if not isinstance(entry, (PodEntry, NodeEntry)):
            for listers in self.queue.listers:
                listers.apply(entry)

    def on_pod_group(self, type_: EventType, group: PodGroup) -> None:
        """A PodGroup added or changed may let its members in (Coscheduling registers
        ``podgroups.v1alpha1.scheduling.x-k8s.io`` Add and Update)."""
        if type_ == "DELETED":
            return
        action = ActionType.Add if type_ == "ADDED" else ActionType.Update
        self.queue.move_all_to_active_or_backoff_queue(
            ClusterEvent(EventResource.PodGroup, action), None, group
        )

    # -- pods ---------------------------------------------------------------------------

    def on_workload_object(self, entry: SchedulingPodGroupEntry | WorkloadEntry) -> None:
        """A native PodGroup or Workload: the listers first (GangScheduling's PreEnqueue
        reads them when the move runs it again), then its Add or Update moves the pods
        whose hints say so (upstream's ``PodGroup``/``Workload`` events)."""
        obj = entry.object
        meta = obj.metadata
        resource = (
            EventResource.SchedulingPodGroup
            if isinstance(obj, SchedulingPodGroup)
            else EventResource.Workload
        )
        old: object | None = None
        if self.queue.listers:
            listers = self.queue.listers[0]
            table = (
                listers.scheduling_pod_groups
                if resource == EventResource.SchedulingPodGroup
                else listers.workloads
            )
            old = table.get(f"{meta.namespace or 'default'}/{meta.name}")
        for listers in self.queue.listers:
            listers.apply(entry)
        if entry.type == "DELETED":
            return
        action = ActionType.Add if old is None else ActionType.Update
        self.queue.move_all_to_active_or_backoff_queue(ClusterEvent(resource, action), old, obj)

    def _scheduling_group_member(self, type_: EventType, pod: Pod) -> bool:
        """Count the pod in its native PodGroup (before PreEnqueue runs for it); True
        when it is a new member, whose arrival may complete a gang."""
        known = False
        for listers in self.queue.listers:
            members = listers.scheduling_group_members
            known = members.has(pod.metadata.uid)
            members.put(pod, deleted=type_ == "DELETED")
        return type_ != "DELETED" and not known and pod.spec.scheduling_group is not None

    def on_pod(self, type_: EventType, pod: Pod, *, order: int, attempts: int = 0) -> None:
        new_member = False
        if pod.spec.scheduling_group is not None or type_ == "DELETED":
            new_member = self._scheduling_group_member(type_, pod)
        self._on_pod(type_, pod, order=order, attempts=attempts)
        if new_member and not is_assigned(pod):
            # Another member of its group may now pass GangScheduling's PreEnqueue.
            self.queue.move_all_to_active_or_backoff_queue(UNSCHEDULED_POD_ADD, None, pod)

    def _on_pod(self, type_: EventType, pod: Pod, *, order: int, attempts: int = 0) -> None:
        uid, key = pod.metadata.uid, namespaced_name(pod.metadata)
        previous = self._uids.get(key)
        if previous is not None and previous != uid:
            self._gone(previous)
        if type_ == "DELETED":
            self._gone(uid)
            if self._uids.get(key) == uid:
                del self._uids[key]
            return
        self._uids[key] = uid
        if is_assigned(pod):
            self._assigned(pod)
        elif uid in self.assigned:
            self._gone(uid)  # terminal
        elif self.pending(pod):
            self._pending(pod, order, attempts)
        else:
            self._leave_queue(uid)

    def _pending(self, pod: Pod, order: int, attempts: int) -> None:
        uid = pod.metadata.uid
        priority = self.classes.priority_of(pod)
        info = self.queue.get(uid)
        if info is None:
            self.queue.add(pod, priority=priority, order=order, attempts=attempts)
            self.nominator.observe(pod, priority)
            return
        old = info.pod
        if old == pod and info.priority == priority:
            return
        self.queue.update(old, pod, priority=priority)
        self.nominator.observe(pod, priority, old)
        nominated = old.status.nominated_node_name
        if nominated and nominated != pod.status.nominated_node_name:
            # Lower or equal priority pods counted it as if it ran there.
            self._nomination_released(old, info.priority)

    def _assigned(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        old = self.assigned.get(uid)
        self.assigned[uid] = pod
        if old is None:
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_ADD, None, pod)
            left = self.queue.delete(uid)  # bound: it leaves the queue and the nominator
            if left is not None and left.was_flushed_from_unschedulable:
                self.queue.scheduled_after_flush += 1
            self.nominator.forget(uid)
            return
        if old == pod:
            return
        for event in pod_scheduling_properties_change(pod, old):
            self.queue.move_all_to_active_or_backoff_queue(event, old, pod)

    def _gone(self, uid: str) -> None:
        """The pod was deleted (or is terminal, or was replaced under its name)."""
        old = self.assigned.pop(uid, None)
        if old is not None:
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, old, None)
        else:
            self._leave_queue(uid)

    def _leave_queue(self, uid: str) -> None:
        info = self.queue.delete(uid)
        self.nominator.forget(uid)
        if info is not None and info.pod.status.nominated_node_name:
            self._nomination_released(info.pod, info.priority)

    def _nomination_released(self, pod: Pod, priority: int) -> None:
        def lower_or_equal(candidate: QueueEntry) -> bool:
            return candidate.priority <= priority

        self.queue.move_all_to_active_or_backoff_queue(
            ASSIGNED_POD_DELETE, pod, None, pre_check=lower_or_equal
        )

    # -- nodes and volumes ----------------------------------------------------------------

    def on_node(self, type_: EventType, node: Node) -> None:
        name = node.metadata.name
        if type_ == "DELETED":
            old = self.nodes.pop(name, node)
            self.queue.move_all_to_active_or_backoff_queue(NODE_DELETE, old, None)
            return
        before = self.nodes.get(name)
        self.nodes[name] = node
        if before is None:
            self.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)
            return
        for event in node_scheduling_properties_change(node, before):
            self.queue.move_all_to_active_or_backoff_queue(event, before, node)

    def on_volume(self, resource: EventResource, type_: EventType, obj: Volume) -> None:
        cache = self._volumes[resource]
        meta = obj.metadata
        key = namespaced_name(meta) if isinstance(obj, _NAMESPACED_OBJECTS) else meta.name
        if type_ == "DELETED":
            old = cache.pop(key, obj)
            if resource is EventResource.DeviceClass:
                return
            event = ClusterEvent(resource, ActionType.Delete)
            self.queue.move_all_to_active_or_backoff_queue(event, old, None)
            return
        before = cache.get(key)
        cache[key] = obj
        if before is None:
            event = ClusterEvent(resource, ActionType.Add)
            self.queue.move_all_to_active_or_backoff_queue(event, None, obj)
        elif before != obj:
            event = ClusterEvent(resource, ActionType.Update)
            self.queue.move_all_to_active_or_backoff_queue(event, before, obj)

    def on_priority_class(self, type_: EventType, priority_class: PriorityClass) -> None:
        if type_ == "DELETED":
            self.classes.delete(priority_class.metadata.name)
        else:
            self.classes.put(priority_class)
        self._reprioritize()

    def _reprioritize(self) -> None:
        for info in self.queue.pods():
            if info.pod.spec.priority is not None:
                continue
            priority = self.classes.priority_of(info.pod)
            if priority != info.priority:
                self.queue.set_priority(info.uid, priority)
                self.nominator.observe(info.pod, priority, info.pod)

    # -- rebuilding -------------------------------------------------------------------

    def resync(self, state: ClusterState) -> None:
        """Converge on ``state`` as if the missing log entries had been applied: what
        disappeared is deleted, what changed is updated (so parked pods see the same
        events), pending pods the queue lacks are added with the attempts their lease
        says were made. Priority classes first, then nodes and volumes, then pods."""
        self.classes = PriorityClasses()
        for priority_class in state.priority_classes:
            self.classes.put(priority_class)
        self._reprioritize()
        self._converge_nodes(state.nodes)
        self._converge_volumes(state.volumes)
        self._converge_pods(state.pods, state.leases)
        for uid in [u for u in self.nominator.nominations if u not in self.queue]:
            self.nominator.forget(uid)

    def _converge_nodes(self, nodes: Iterable[Node]) -> None:
        current = {n.metadata.name: n for n in nodes}
        for name in [n for n in self.nodes if n not in current]:
            self.on_node("DELETED", self.nodes[name])
        for node in current.values():
            self.on_node("MODIFIED", node)

    def _converge_volumes(self, volumes: Iterable[Volume]) -> None:
        resources = {
            PersistentVolume: EventResource.PersistentVolume,
            PersistentVolumeClaim: EventResource.PersistentVolumeClaim,
            StorageClass: EventResource.StorageClass,
            ResourceClaim: EventResource.ResourceClaim,
            ResourceSlice: EventResource.ResourceSlice,
            DeviceClass: EventResource.DeviceClass,
        }
        seen: dict[EventResource, set[str]] = {r: set() for r in self._volumes}
        current: list[tuple[EventResource, Volume]] = []
        for obj in volumes:
            resource = resources[type(obj)]
            meta = obj.metadata
            key = namespaced_name(meta) if isinstance(obj, _NAMESPACED_OBJECTS) else meta.name
            seen[resource].add(key)
            current.append((resource, obj))
        for resource, cache in self._volumes.items():
            for key in [k for k in cache if k not in seen[resource]]:
                self.on_volume(resource, "DELETED", cache[key])
        for resource, obj in current:
            self.on_volume(resource, "MODIFIED", obj)

    def _converge_pods(self, pods: list[Pod], leases: Mapping[str, int]) -> None:
        present = {p.metadata.uid for p in pods}
        for uid in [u for u in self.assigned if u not in present]:
            self._gone(uid)
        for info in [i for i in self.queue.pods() if i.uid not in present]:
            self._leave_queue(info.uid)
        self._uids = {k: u for k, u in self._uids.items() if u in present}
        ordered = sorted(pods, key=lambda p: (p.metadata.creation_timestamp or "", p.metadata.name))
        for position, pod in enumerate(ordered):
            # Negative orders: reloaded pods go before anything the log adds later.
            order = position - len(ordered)
            self.on_pod("MODIFIED", pod, order=order, attempts=leases.get(pod.metadata.uid, 0))
