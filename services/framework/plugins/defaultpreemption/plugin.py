"""DefaultPreemption (PostFilter): when a pod fits nowhere, find the node where removing
the fewest, least important lower-priority pods makes it fit, and nominate it there.

Upstream's ``defaultpreemption`` plugin and ``preemption.Evaluator``, in their order:

1. Eligibility (``PodEligibleToPreemptOthers``): ``preemptionPolicy: Never`` never
   preempts; a pod whose nominated node still has a lower-priority pod terminating by
   preemption waits for it (unless the filters found that node unresolvable now).
2. Where preemption might help: the nodes whose filter status is ``Unschedulable``
   (``NodesForStatusCode``); an ``UnschedulableAndUnresolvable`` node cannot be fixed
   by removing pods.
3. Dry runs, from a random offset over those nodes, until enough candidates are found
   (``max(nodes * minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)``,
   at least one without PDB violations): on each node remove every lower-priority
   pod, check the pod fits (every filter, nominated pods considered, PreFilter state
   kept right by the AddPod/RemovePod extensions), then reprieve victims — those
   whose PDB would be violated first, then the rest, most important first — as long
   as the pod still fits (``SelectVictimsOnNode``).
4. The best candidate (``pickOneNodeForPreemption``): fewest PDB violations, lowest
   highest-priority victim, smallest sum of priorities, fewest victims, latest start
   of the highest-priority victims, then the first.

The plugin decides; it does not delete. Its PostFilterResult names the node, the
victims and the lower-priority pods nominated there that lose their nomination; the
scheduling cycle publishes them (a plugin here has no API server to call). Waiting
victims (Permit) are rejected here, as upstream's ``PreemptPod`` does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from contracts.k8s import Pod, PodDisruptionBudget
from services.common.k8s.labels import matches_label_selector
from services.common.k8s.timestamps import parse_time
from services.framework.api.diagnosis import Diagnosis, FitError
from services.framework.api.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from services.framework.api.interface import (
    CycleState,
    EnqueueExtensions,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from services.framework.api.preemption import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    WAITING_FOR_PREEMPTION,
)
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo, pod_uid
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs

NAME: Final = "DefaultPreemption"

NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
_NO_VICTIMS_STATUS: Final = Status(Code.UnschedulableAndUnresolvable, (NO_VICTIMS,))
"""One status for every node without lower-priority pods (statuses are immutable)."""
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_NODES: Final = "no nodes available"
VICTIM_PREEMPTED: Final = "preempted"
"""How a waiting victim's wait is rejected (``waitingPod.Preempt(plugin, "preempted")``)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node the pod fits on once ``victims`` (most important first) are gone."""

    node: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int


def start_time(pod: Pod, now: float) -> float:
    """``GetPodStartTime``: ``status.startTime``, else now (not started yet)."""
    started = parse_time(pod.status.start_time)
    return now if started is None else started


def more_important(a: PodInfo, b: PodInfo, now: float) -> bool:
    """``util.MoreImportantPod``: higher priority, then the one that started first."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return start_time(a.pod, now) < start_time(b.pod, now)


def importance_key(now: float) -> Callable[[PodInfo], tuple[int, float]]:
    """A sort key putting the most important pods first (see :func:`more_important`)."""
    return lambda p: (-p.priority, start_time(p.pod, now))


def terminating_by_preemption(pod: Pod) -> bool:
    """``podTerminatingByPreemption``: being deleted, with a DisruptionTarget condition
    set by the scheduler's preemption."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == PREEMPTION_BY_SCHEDULER
    return False


def split_by_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in the order
    given. A pod violates when a PDB of its namespace whose (non-empty) selector
    matches it has no disruption left for it, counting the pods before it; a pod the
    PDB already lists as disrupted does not count."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    fine: list[PodInfo] = []
    for info in pods:
        meta = info.pod.metadata
        violated = False
        if meta.labels:
            for i, pdb in enumerate(pdbs):
                if (pdb.metadata.namespace or "default") != (meta.namespace or "default"):
                    continue
                selector = pdb.spec.selector
                if selector is None or not (selector.match_labels or selector.match_expressions):
                    continue  # a nil or empty selector matches nothing
                if not matches_label_selector(selector, meta.labels):
                    continue
                if meta.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else fine).append(info)
    return violating, fine


CRITERIA: Final = (
    "fewest PDB violations",
    "lowest highest-priority victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start of the highest-priority victims",
)
"""What decided between candidates, in ``pickOneNodeForPreemption``'s order."""


def pick_one_node(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """``pickOneNodeForPreemption`` with the default score functions, in order; ties
    after all of them go to the first candidate."""
    return pick_with_reason(candidates, now)[0]


def pick_with_reason(candidates: Sequence[Candidate], now: float) -> tuple[Candidate | None, str]:
    """:func:`pick_one_node` and what decided it (a :data:`CRITERIA` entry, "the only
    candidate" or "the first of the candidates left tied")."""
    if not candidates:
        return None, ""
    if len(candidates) == 1:
        return candidates[0], "the only candidate"

    def earliest_start_of_highest(c: Candidate) -> float:
        """``GetEarliestPodStartTime``: the earliest start among the highest-priority
        victims."""
        top = max(v.priority for v in c.victims)
        return min(start_time(v.pod, now) for v in c.victims if v.priority == top)

    scores: tuple[Callable[[Candidate], float], ...] = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + 2**31 for v in c.victims),
        lambda c: -len(c.victims),
        earliest_start_of_highest,
    )
    remaining = list(candidates)
    for criterion, score in zip(CRITERIA, scores, strict=True):
        values = [score(c) for c in remaining]
        best = max(values)
        remaining = [c for c, v in zip(remaining, values, strict=True) if v == best]
        if len(remaining) == 1:
            return remaining[0], criterion
    return remaining[0], "the first of the candidates left tied"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    def __init__(
        self,
        args: DefaultPreemptionArgs,
        handle: Handle,
        rng: Callable[[int], int] | None = None,
    ) -> None:
        args = args.defaulted()
        self.percentage = args.min_candidate_nodes_percentage or 0
        self.absolute = args.min_candidate_nodes_absolute or 0
        self.handle = handle
        self.offset: Callable[[int], int] = rng or handle.rng.randrange
        """``getOffsetRand``: where the dry runs start among the potential nodes."""

    @property
    def name(self) -> str:
        return NAME

    # -- PreEnqueue: not retried against its own preemption -----------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        """Keep a preemptor out of activeQ while its victims are not gone (the queue's
        :class:`~services.framework.api.preemption.Preempting`)."""
        if self.handle.preempting.running(pod.uid, self.handle.now()):
            return Status(Code.UnschedulableAndUnresolvable, (WAITING_FOR_PREEMPTION,))
        return Status()

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """An assigned pod's deletion may end the preemption that gates a pod."""
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.AssignedPod, ActionType.Delete), self._after_delete
            ),
        )

    def _after_delete(self, pod: Pod, old: object | None, new: object | None) -> QueueingHint:
        if self.handle.preempting.running(pod_uid(pod), self.handle.now()):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    # -- PostFilter -------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, diagnosis)
        message = status.message()
        if message:
            return result, Status(status.code, (f"preemption: {message}",))
        return result, status

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """``Evaluator.Preempt``."""
        nodes = self.handle.runner.cycle_nodes()
        eligible, why = self.eligible(pod, nodes, diagnosis)
        if not eligible:
            return None, Status(Code.Unschedulable, (why,))
        if nodes.num_nodes == 0:
            return None, Status(Code.Error, (NO_NODES,))
        candidates, statuses, errors = self.find_candidates(state, pod, nodes, diagnosis)
        if errors and not candidates:
            return None, Status(Code.Error, (errors[0],))
        if not candidates:
            return PostFilterResult(""), Status(
                Code.Unschedulable, (self.fit_error(pod, nodes, statuses),)
            )
        best, reason = pick_with_reason(candidates, self.handle.now())
        assert best is not None
        for victim in best.victims:
            waiting = self.handle.waiting_pods.get_waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject(NAME, VICTIM_PREEMPTED)
        cleared = tuple(
            p for p in self.handle.runner.nominated_pods_for(best.node) if p.priority < pod.priority
        )
        explained = _explained(candidates, best, reason) if state.explain else None
        result = PostFilterResult(
            best.node, best.victims, best.num_pdb_violations, cleared, explained
        )
        return result, Status()

    def eligible(self, pod: PodInfo, nodes: Snapshot, diagnosis: Diagnosis) -> tuple[bool, str]:
        """``PodEligibleToPreemptOthers``."""
        if pod.pod.spec.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            row = nodes.index.get(nominated)
            status = diagnosis.node_status(row) if row is not None else None
            if status is not None and status.code == Code.UnschedulableAndUnresolvable:
                return True, ""
            if row is not None:
                for other in nodes.pods[row].values():
                    if other.priority < pod.priority and terminating_by_preemption(other.pod):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def num_candidates(self, num_nodes: int) -> int:
        """``calculateNumCandidates`` (Go's integer arithmetic)."""
        n = num_nodes * self.percentage // 100
        return min(max(n, self.absolute), num_nodes)

    def find_candidates(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot, diagnosis: Diagnosis
    ) -> tuple[list[Candidate], dict[int, Status], list[str]]:
        """``findCandidates`` and ``DryRunPreemption``, one node after the other from
        the offset: the candidates (those without PDB violations first), the status of
        each node tried that gave none, and the internal errors met."""
        potential = diagnosis.rows_with_code(Code.Unschedulable)
        if not potential:
            return [], {}, []
        pdbs = list(self.handle.listers.pod_disruption_budgets.values())
        offset = self.offset(len(potential))
        wanted = self.num_candidates(len(potential))
        order = potential[offset:] + potential[:offset]
        if not self.handle.runner.extensions_active(state):
            return self.dry_run_columns(state, pod, nodes, order, wanted, pdbs)
        fine: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        errors: list[str] = []
        for i in range(len(potential)):
            row = potential[(offset + i) % len(potential)]
            victims, violations, status = self.select_victims(state.clone(), pod, nodes, row, pdbs)
            if status.is_success() and victims:
                kept = fine if violations == 0 else violating
                if len(kept) < wanted:
                    kept.append(Candidate(nodes.names[row], tuple(victims), violations))
                if fine and len(fine) + len(violating) >= wanted:
                    break
                continue
            if status.is_success():
                status = Status(
                    Code.Error, (f'expected at least one victim pod on node "{nodes.names[row]}"',)
                )
            if status.code == Code.Error:
                errors.append(status.message())
            statuses[row] = status
        return fine + violating, statuses, errors

    def dry_run_columns(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Snapshot,
        order: Sequence[int],
        wanted: int,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[Candidate], dict[int, Status], list[str]]:
        """``DryRunPreemption`` when no PreFilter extension keeps cross-node state
        (the pod has no inter-pod affinity, spread constraint or shared volume): the
        nodes' own columns are all that removing or adding a pod changes, so
        ``SelectVictimsOnNode`` runs on a chunk of nodes at once — the filters once
        without every lower-priority pod, then once per reprieve step (the k-th
        victim of every node together). Victim lists are sorted and split by PDB only
        for the nodes the pod fits once their lower-priority pods are gone. The same
        candidates, in the same order, as running it node after node."""
        fine: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        errors: list[str] = []
        now = self.handle.now()
        key = importance_key(now)
        priority = pod.priority
        chunk = max(wanted, 64)
        for start in range(0, len(order), chunk):
            rows: list[int] = []
            removed: dict[int, list[PodInfo]] = {}
            for row in order[start : start + chunk]:
                lower = [p for p in nodes.pods[row].values() if p.priority < priority]
                if not lower:
                    statuses[row] = _NO_VICTIMS_STATUS
                    continue
                rows.append(row)
                removed[row] = lower
            if not rows:
                continue
            # A node whose pods are all lower is emptied (Snapshot._take): most nodes
            # of a pod that fits nowhere fail here, before any victim list is built.
            view = nodes.without_pods(rows, removed)
            passed, status_of = self.handle.runner.filter_many(state, pod, view)
            alive: list[int] = []
            lists: dict[int, list[tuple[PodInfo, bool]]] = {}
            mixed: dict[int, bool] = {}
            """Per node: both PDB-violating and other lower-priority pods (upstream then
            sorts the victims again)."""
            for i, row in enumerate(rows):
                if not passed[i]:
                    statuses[row] = status_of(i)
                    continue
                alive.append(i)
                lower = removed[row]
                lower.sort(key=key)
                bad, good = split_by_pdb_violation(lower, pdbs)
                lists[i] = [(p, True) for p in bad] + [(p, False) for p in good]
                mixed[i] = bool(bad) and bool(good)
            victims: dict[int, list[PodInfo]] = {i: [] for i in alive}
            counts: dict[int, int] = dict.fromkeys(alive, 0)
            for step in range(max((len(lists[i]) for i in alive), default=0)):
                trying = {i: lists[i][step] for i in alive if step < len(lists[i])}
                # The view is this dry run's own: reprieve in place, undo what fails.
                done = view.adjust({i: [p] for i, (p, _) in trying.items()}, +1)
                fits = self.handle.runner.fits_many(state, pod, view, list(trying))
                back = [i for i in trying if not fits[i]]
                for i in back:
                    candidate, violates = trying[i]
                    victims[i].append(candidate)
                    counts[i] += int(violates)
                view.undo(done, back)
            for i in alive:
                row = rows[i]
                chosen = victims[i]
                if not chosen:
                    message = f'expected at least one victim pod on node "{nodes.names[row]}"'
                    errors.append(message)
                    statuses[row] = Status(Code.Error, (message,))
                    continue
                if mixed[i]:
                    chosen.sort(key=key)
                kept = fine if counts[i] == 0 else violating
                if len(kept) < wanted:
                    kept.append(Candidate(nodes.names[row], tuple(chosen), counts[i]))
                if fine and len(fine) + len(violating) >= wanted:
                    return fine + violating, statuses, errors
        return fine + violating, statuses, errors

    def select_victims(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Snapshot,
        row: int,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]:
        """``SelectVictimsOnNode`` on node ``row`` with ``state`` (a copy)."""
        runner = self.handle.runner
        name = nodes.names[row]
        potential = [p for p in nodes.pods[row].values() if p.priority < pod.priority]
        if not potential:
            return [], 0, _NO_VICTIMS_STATUS
        for victim in potential:
            status = runner.remove_pod(state, pod, victim, name)
            if not status.is_success():
                return [], 0, status
        view = nodes.without_pods([row], {row: potential})
        status = runner.filter_with_nominated_pods(state, pod, view)
        if not status.is_success():
            return [], 0, status
        now = self.handle.now()
        potential.sort(key=importance_key(now))
        violating, fine = split_by_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (fine, False)):
            for candidate in group:
                status = runner.add_pod(state, pod, candidate, name)
                if not status.is_success():
                    return [], 0, status
                trial = view.with_pods([0], {0: [candidate]})
                if runner.filter_with_nominated_pods(state, pod, trial).is_success():
                    view = trial  # reprieved: it stays
                    continue
                status = runner.remove_pod(state, pod, candidate, name)
                if not status.is_success():
                    return [], 0, status
                victims.append(candidate)
                num_violating += int(counts)
        if violating and fine:
            victims.sort(key=importance_key(now))
        return victims, num_violating, Status()

    def fit_error(self, pod: PodInfo, nodes: Snapshot, statuses: Mapping[int, Status]) -> str:
        """The FitError of a preemption that found no candidate: each node tried with
        its status, every other node "Preemption is not helpful for scheduling"."""
        diagnosis = Diagnosis(num_nodes=nodes.num_nodes)
        # Counted by reasons first: thousands of nodes share a few statuses.
        for reasons, count in Counter(s.reasons for s in statuses.values()).items():
            for reason in reasons:
                diagnosis.reason_counts[reason] += count
        others = nodes.num_nodes - len(statuses)
        if others:
            diagnosis.reason_counts[NOT_HELPFUL] += others
        return str(FitError(pod.key, nodes.num_nodes, diagnosis))


def _explained(candidates: Sequence[Candidate], best: Candidate, reason: str) -> dict[str, Any]:
    """``--explain``'s account of a preemption: each candidate with its victims
    (``namespace/name``, priority) and PDB violations, the node chosen and why."""
    return {
        "candidates": [
            {
                "node": c.node,
                "victims": [{"pod": v.key, "priority": v.priority} for v in c.victims],
                "pdbViolations": c.num_pdb_violations,
            }
            for c in candidates
        ],
        "nominatedNode": best.node,
        "decidedBy": reason,
    }


def new(args: DefaultPreemptionArgs, handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args, handle)
