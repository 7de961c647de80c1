"""``Explanation``: what every filter said about each node and how each scored, for one
scheduling attempt (``--explain``), like kube-scheduler-simulator's results.

:meth:`Framework.schedule_pod` builds one only when asked (``explain=True``); the
scheduling hot path never pays for it. :meth:`Explanation.to_json` is the shape that
travels on the decision (annotation ``ksched.io/explain``) and that ``ksched simulate
--explain --output json`` prints::

    {
      "evaluatedNodes": 3,
      "feasibleNodes": 2,
      "filterPlugins": ["NodeResourcesFit", "TaintToleration"],
      "filter": {
        "a": "passed",
        "b": {"plugin": "NodeResourcesFit", "status": "Unschedulable",
              "reasons": ["Insufficient cpu"]},
        "c": "passed"
      },
      "score": {
        "a": {"plugins": {"NodeResourcesFit": {"score": 62, "weighted": 62}}, "total": 62},
        "c": {"plugins": {"NodeResourcesFit": {"score": 40, "weighted": 40}}, "total": 40}
      },
      "nodeDetails": {"DynamicResources": {"claims": {"gpu": {"claim": "web-gpu",
        "allocated": true, "devices": [{"request": "req-1", "driver": "gpu.example.com",
        "pool": "a", "device": "gpu-0"}]}}}}
    }

- ``filter`` has every node the Filter phase evaluated (with node sampling, only those
  the search reached), plus the nodes a PreFilterResult excluded; when PreFilter
  rejected the pod, every node with that rejection. A rejected node names the first
  plugin, in ``filterPlugins`` order, that rejected it: the later ones did not run.
- ``score`` has every feasible node that was scored: ``score`` is the plugin's
  normalized score (0-100), ``weighted`` that times the plugin's weight, ``total`` the
  sum the node was ranked by. It is empty when there was nothing to rank (one
  feasible node, or the pod's nominated node fit), as upstream does not score then.
- ``nodeDetails`` (only when a plugin has something to say): per plugin, what it
  decided for the node the pod goes to; DynamicResources names the device of each
  request of each claim (``allocated``: chosen in this attempt, else allocated before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.framework.api.status import Status
from services.framework.api.types import Int64Array

PASSED = "passed"


@dataclass(frozen=True, slots=True)
class NodeScore:
    plugins: Mapping[str, tuple[int, int]]
    """Score plugin → (normalized score, weighted score)."""
    total: int


@dataclass(frozen=True, slots=True)
class Explanation:
    evaluated_nodes: int
    feasible_nodes: int
    filter_plugins: tuple[str, ...]
    """The Filter plugins that ran for this pod, in order (PreFilter Skip excluded)."""
    filter: Mapping[str, Status | None]
    """Node → the Status that rejected it, or None if it passed every filter."""
    score: Mapping[str, NodeScore]
    preemption: Mapping[str, Any] | None = None
    """PostFilter's preemption, when it ran: candidates, victims, the chosen node."""
    node_details: Mapping[str, Mapping[str, Any]] | None = None
    """Plugin → what it decided for the chosen node (``ExplainsNode``), when any did."""

    def to_json(self) -> dict[str, Any]:
        out = self._json()
        if self.preemption is not None:
            out["preemption"] = dict(self.preemption)
        if self.node_details:
            out["nodeDetails"] = {name: dict(d) for name, d in self.node_details.items()}
        return out

    def _json(self) -> dict[str, Any]:
        return {
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
            "filterPlugins": list(self.filter_plugins),
            "filter": {node: _verdict(status) for node, status in self.filter.items()},
            "score": {
                node: {
                    "plugins": {
                        name: {"score": normalized, "weighted": weighted}
                        for name, (normalized, weighted) in scores.plugins.items()
                    },
                    "total": scores.total,
                }
                for node, scores in self.score.items()
            },
        }


def _verdict(status: Status | None) -> object:
    if status is None:
        return PASSED
    return {"plugin": status.plugin, "status": status.code.name, "reasons": list(status.reasons)}


def filter_verdicts(
    names: Sequence[str],
    rows: Iterable[int],
    status_of: Callable[[int], Status | None],
    unnamed: str = "",
) -> dict[str, Status | None]:
    """Node → verdict for ``rows`` (in table order). A rejection that names no plugin
    (a node outside the PreFilterResult) is attributed to ``unnamed``."""
    verdicts: dict[str, Status | None] = {}
    for row in sorted(rows):
        status = status_of(row)
        if status is not None and not status.plugin:
            status = status.with_plugin(unnamed)
        verdicts[names[row]] = status
    return verdicts


def node_scores(
    names: Sequence[str],
    rows: Sequence[int],
    breakdown: Mapping[str, Int64Array],
    weights: Mapping[str, int],
    totals: Int64Array,
) -> dict[str, NodeScore]:
    """Node → its scores, for the scored ``rows`` (``breakdown`` and ``totals`` are
    aligned with them)."""
    columns = {name: scores.tolist() for name, scores in breakdown.items()}
    out: dict[str, NodeScore] = {}
    for i, row in enumerate(rows):
        plugins = {name: (column[i], column[i] * weights[name]) for name, column in columns.items()}
        out[names[row]] = NodeScore(plugins, int(totals[i]))
    return out
