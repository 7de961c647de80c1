"""A PodGroup's status as the scheduler-plugins PodGroup controller derives it from the
group's pods (``pkg/controllers/podgroup_controller.go``), as a pure function.

- fewer pods than ``minMember``: ``Pending``;
- enough pods, fewer than ``minMember`` on nodes: ``Scheduling``;
- ``minMember`` on nodes: ``Scheduled``; ``minMember`` running or succeeded: ``Running``;
- any failed once ``minMember`` have run or are running: ``Failed``;
- ``minMember`` succeeded: ``Finished``.

``scheduled`` counts the members on a node (the controller counts those the scheduler
bound), ``running`` / ``succeeded`` / ``failed`` the members in that phase.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts.k8s import Pod, PodGroup, PodGroupStatus


def pod_group_status(group: PodGroup, pods: Iterable[Pod]) -> PodGroupStatus:
    members = list(pods)
    need = group.spec.min_member
    scheduled = sum(1 for p in members if p.spec.node_name)
    running = sum(1 for p in members if p.status.phase == "Running")
    succeeded = sum(1 for p in members if p.status.phase == "Succeeded")
    failed = sum(1 for p in members if p.status.phase == "Failed")
    if len(members) < need:
        phase = "Pending"
    elif succeeded >= need:
        phase = "Finished"
    elif failed and failed + running + succeeded >= need:
        phase = "Failed"
    elif running + succeeded >= need:
        phase = "Running"
    elif scheduled >= need:
        phase = "Scheduled"
    else:
        phase = "Scheduling"
    return PodGroupStatus(
        phase=phase, scheduled=scheduled, running=running, succeeded=succeeded, failed=failed
    )
