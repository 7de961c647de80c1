"""What must hold at the end of a chaos run, computed from what was observed.

:class:`Observed` is gathered after the run (:mod:`.observe`): the Bindings the client
received, the store's pods, reservations, leases and objects, and the event log.
:func:`evaluate` turns it into the rows of the summary; any row that is not ``ok`` is a
violation and the run exits non-zero.

- **pods lost**: published, schedulable, and not bound in the store at the end.
- **Bindings not delivered**: bound in the store, but the client never received a Binding.
- **pods bound twice**: the event log records the pod's binding more than once.
- **duplicate events recorded**: a log entry that leaves its object exactly as the entry
  before left it (the informer drops duplicates; the client publishes a chunk again when
  the broker did not confirm it, so duplicates do arrive).
- **pods bound to two nodes**: the client received Bindings to different nodes, or one
  that disagrees with the node the store has.
- **nodes over allocatable**: the pods the store has on a node request more of a
  resource than the node allows.
- **hard constraints broken**: what the final-state checker
  (services.framework.verify) reports: every bound pod judged by the default
  profile's filters with all the others in place.
- **left behind**: reservations (assumed pods), leases and waiting pods still in the
  store once every pod is bound.
- **services exited on their own**: a crash, not a kill of the run's.
- **log and store disagree**: objects (by kind and uid) that differ between the event log
  folded to its last state and the store, or a store whose applied seq is not the log's.

A Binding repeated to the same node is not a violation: binding is at least once (the
README), the informer records it once, which "pods bound twice" checks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Observed:
    pods: Sequence[str]
    """Every schedulable pod published (``namespace/name``)."""
    decisions: Mapping[str, Sequence[str]]
    """Pod → the node of every Binding the client received for it, in arrival order."""
    placed: Mapping[str, str]
    """Pod → ``spec.nodeName`` of the pod in the store (bound pods only)."""
    log_bindings: Mapping[str, int]
    """Pod → how many binding entries the event log has for it."""
    log_repeats: Sequence[str]
    """Log entries that left their object as it was: a duplicate recorded."""
    requests: Mapping[str, int]
    """What each pod requests (same units as ``allocatable``)."""
    allocatable: Mapping[str, Mapping[str, int]]
    """Node → its allocatable."""
    reservations: Sequence[str]
    leases: Sequence[str]
    waiting: Sequence[str]
    """The pods the store still holds as waiting at Permit."""
    log_objects: Mapping[tuple[str, str], Any]
    """(kind, uid) → the object's last state in the event log (deleted ones left out)."""
    store_objects: Mapping[tuple[str, str], Any]
    log_seq: int
    store_seq: int
    crashed: Sequence[str] = ()
    """Services that exited without being killed by the run."""
    violations: Sequence[str] = ()
    """The final-state checker's report, one line per violation."""


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    value: str
    ok: bool
    detail: str = ""


def evaluate(o: Observed) -> list[Row]:
    return [
        count_row("pods lost (never bound)", [p for p in o.pods if p not in o.placed]),
        count_row(
            "Bindings not delivered to the client",
            [p for p in o.placed if not o.decisions.get(p)],
        ),
        count_row("pods bound twice (log)", [p for p, n in o.log_bindings.items() if n > 1]),
        count_row("duplicate events recorded (log)", o.log_repeats),
        count_row("pods bound to two nodes", _two_nodes(o)),
        count_row("nodes over allocatable", _overcommitted(o)),
        count_row("hard constraints broken (final state)", o.violations),
        count_row("reservations left behind", o.reservations),
        count_row("leases left behind", o.leases),
        count_row("waiting pods left behind", o.waiting),
        count_row("log and store disagree (objects)", _disagree(o)),
        count_row("services exited on their own", o.crashed),
        Row(
            "log seq = store applied seq",
            f"{o.log_seq} / {o.store_seq}",
            o.log_seq == o.store_seq,
        ),
    ]


def count_row(name: str, offenders: Sequence[str]) -> Row:
    shown = ", ".join(sorted(offenders)[:5]) + (", …" if len(offenders) > 5 else "")
    return Row(name, str(len(offenders)), not offenders, shown)


def _two_nodes(o: Observed) -> list[str]:
    out = []
    for pod, nodes in o.decisions.items():
        distinct = set(nodes)
        if len(distinct) > 1 or (pod in o.placed and distinct != {o.placed[pod]}):
            out.append(pod)
    return out


def _overcommitted(o: Observed) -> list[str]:
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node in o.placed.values():
        for resource, amount in o.requests.items():
            used[node][resource] += amount
    out = []
    for node, usage in used.items():
        allocatable = o.allocatable.get(node, {})
        over = [r for r, amount in usage.items() if amount > allocatable.get(r, 0)]
        if over:
            out.append(f"{node} ({', '.join(over)})")
    return out


def _disagree(o: Observed) -> list[str]:
    keys = o.log_objects.keys() | o.store_objects.keys()
    return [
        f"{kind} {uid}"
        for kind, uid in keys
        if o.log_objects.get((kind, uid)) != o.store_objects.get((kind, uid))
    ]


def table(rows: Sequence[Row], facts: Sequence[tuple[str, str]]) -> str:
    """The summary: the run's facts, then one line per check with its verdict."""
    width = max(len(name) for name, _ in [*facts, *((r.name, "") for r in rows)])
    lines = [f"{name:<{width}}  {value}" for name, value in facts]
    lines.append("-" * (width + 24))
    for r in rows:
        verdict = "ok" if r.ok else "VIOLATION"
        detail = f"  {r.detail}" if r.detail and not r.ok else ""
        lines.append(f"{r.name:<{width}}  {r.value:>12}  {verdict}{detail}")
    return "\n".join(lines)


def verdict(timeline: Sequence[str], rows: Sequence[Row], facts: Sequence[tuple[str, str]]) -> int:
    """Print the faults' timeline and the summary; the run's exit code (0: every row ok)."""
    print("\n".join(["faults:", *timeline, ""]))
    print(table(rows, facts))
    return 0 if all(r.ok for r in rows) else 1
