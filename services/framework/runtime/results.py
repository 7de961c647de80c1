"""``PluginResults``: each plugin's answer at PreFilter, PreScore, Score (before
NormalizeScore), PostFilter, Reserve, Permit, PreBind and Bind in one explained
attempt, as kube-scheduler-simulator's result store keeps them (its
``plugin/resultstore/store.go``, filled by ``plugin/wrappedplugin.go``).

Recorded only when the attempt is explained (``CycleState.explain``): the runners of
those points ask :func:`results_of` once per point, which is None otherwise, so the
scheduling hot path records nothing. The scheduler adds :meth:`PluginResults.to_json`
to the explanation (key ``pluginResults``) and the binder its binding cycle's
(:meth:`PluginResults.binding_json`, into the same key); ``ksched simulate -o
annotations`` reads them there (cli.annotations). Filter verdicts and the normalized
and weighted scores are in the explanation already (runtime.explain).

The strings are the simulator's: ``success`` for a Success, ``wait`` for a Permit Wait,
else the status's message, which for a Skip is empty (the simulator writes
``Status.Message()`` for every status but Success); a Permit timeout is written as Go's
``Duration.String()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.framework.api.interface import CycleState, PostFilterResult, PreFilterResult
from services.framework.api.status import Status, StatusError
from services.framework.api.types import Int64Array
from services.framework.runtime.waiting_pods import go_duration

KEY = "ksched.io/plugin-results"
"""Where an explained attempt's CycleState holds its PluginResults."""

SUCCESS = "success"
WAIT = "wait"


def message(status: Status) -> str:
    """What the simulator writes for a plugin's status: ``success``, ``wait`` or the
    status's message (empty for a Skip)."""
    if status.is_success():
        return SUCCESS
    if status.is_wait():
        return WAIT
    return status.message()


@dataclass(slots=True)
class PluginResults:
    pre_filter: dict[str, str] = field(default_factory=dict)
    """PreFilter plugin → its status (``prefilter-result-status``)."""
    pre_filter_nodes: dict[str, list[str]] = field(default_factory=dict)
    """PreFilter plugin → the nodes its PreFilterResult allows, when it returned one
    (``prefilter-result``)."""
    pre_score: dict[str, str] = field(default_factory=dict)
    """PreScore plugin → its status (``prescore-result``)."""
    score: dict[str, dict[str, int]] = field(default_factory=dict)
    """Node → Score plugin → its score before NormalizeScore (``score-result``)."""
    post_filter: dict[str, str] = field(default_factory=dict)
    """PostFilter plugin → the node it nominated, empty when it did not succeed
    (``postfilter-result`` pairs it with the nodes Filter rejected)."""
    reserve: dict[str, str] = field(default_factory=dict)
    """Reserve plugin → its status, up to the first failure (``reserve-result``)."""
    selected_node: str = ""
    """The node Reserve ran for (``selected-node``)."""
    permit: dict[str, str] = field(default_factory=dict)
    """Permit plugin → its status, up to the first rejection (``permit-result``)."""
    permit_timeout: dict[str, str] = field(default_factory=dict)
    """Permit plugin → the timeout it returned (``permit-result-timeout``)."""
    pre_bind: dict[str, str] = field(default_factory=dict)
    """PreBind plugin → its status, up to the first failure (``prebind-result``); the
    binder records it, and Bind's."""
    bind: dict[str, str] = field(default_factory=dict)
    """Bind plugin → its status, up to the first that does not Skip (``bind-result``)."""

    def pre_filtered(self, plugin: str, status: Status, result: PreFilterResult | None) -> None:
        self.pre_filter[plugin] = message(status)
        if result is not None and result.node_names is not None:
            self.pre_filter_nodes[plugin] = sorted(result.node_names)

    def scored(
        self, plugin: str, names: Sequence[str], rows: Sequence[int], raw: Int64Array
    ) -> None:
        for row, value in zip(rows, raw.tolist(), strict=True):
            self.score.setdefault(names[row], {})[plugin] = int(value)

    def post_filtered(self, plugin: str, result: PostFilterResult | None, status: Status) -> None:
        nominated = result.nominated_node_name if result is not None else None
        self.post_filter[plugin] = (nominated or "") if status.is_success() else ""

    def permitted(self, plugin: str, status: Status, timeout: float) -> None:
        self.permit[plugin] = message(status)
        self.permit_timeout[plugin] = go_duration(max(float(timeout), 0.0))

    def to_json(self) -> dict[str, Any]:
        return {
            "preFilter": dict(self.pre_filter),
            "preFilterResult": {k: list(v) for k, v in self.pre_filter_nodes.items()},
            "preScore": dict(self.pre_score),
            "score": {node: dict(plugins) for node, plugins in self.score.items()},
            "postFilter": dict(self.post_filter),
            "reserve": dict(self.reserve),
            "selectedNode": self.selected_node,
            "permit": dict(self.permit),
            "permitTimeout": dict(self.permit_timeout),
        }

    def binding_json(self) -> dict[str, Any]:
        """What the binding cycle recorded (the binder adds it to the explanation)."""
        return {"preBind": dict(self.pre_bind), "bind": dict(self.bind)}


def results_of(state: CycleState) -> PluginResults | None:
    """The attempt's PluginResults (made on first use), or None when the attempt is not
    explained: nothing is recorded then."""
    if not state.explain:
        return None
    try:
        return state.read(KEY, PluginResults)
    except StatusError:  # the first point of the attempt: none yet
        results = PluginResults()
        state.write(KEY, results)
        return results
