"""The shared eviction step: each limit as upstream's plugins react to it, and any other
refusal logged (``eviction failed``) with the next pod tried."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pytest

from contracts.k8s import Pod
from services.descheduler import api
from services.descheduler.plugins.base import Outcome, evict, evict_all
from tests.builders import make_pod


@dataclass
class Refusing:
    """An evictor refusing the pods named in ``errors`` with that error."""

    errors: dict[str, api.EvictionError]
    evicted: list[str] = field(default_factory=list)

    def filter(self, pod: Pod) -> bool:
        return True

    def pre_eviction_filter(self, pod: Pod) -> bool:
        return True

    def evict(self, pod: Pod, options: api.EvictOptions) -> None:
        error = self.errors.get(pod.metadata.name)
        if error is not None:
            raise error
        self.evicted.append(pod.metadata.name)


@dataclass
class FakeHandle:
    evictor: Refusing


PODS = [make_pod(name) for name in ("a", "b", "c")]


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (None, Outcome.EVICTED),
        (api.NodeLimitError("n1"), Outcome.NODE_LIMIT),
        (api.TotalLimitError(), Outcome.TOTAL_LIMIT),
        (api.NamespaceLimitError("default"), Outcome.FAILED),
        (api.BudgetError("web"), Outcome.FAILED),
        (api.EvictionError("pod default/a is already being evicted"), Outcome.FAILED),
    ],
)
def test_each_refusal_has_its_outcome(error, outcome):
    handle = FakeHandle(Refusing({"a": error} if error else {}))
    assert evict(handle, PODS[0], "Plugin") is outcome


def test_a_refusal_other_than_a_limit_is_logged_and_the_next_pod_tried(caplog):
    handle = FakeHandle(Refusing({"a": api.BudgetError("web")}))
    with caplog.at_level(logging.INFO, logger="ksched.descheduler"):
        assert evict_all(handle, PODS, "Plugin")
    assert handle.evictor.evicted == ["b", "c"]
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        'eviction failed: Cannot evict pod as it would violate the pod\'s disruption budget "web".'
    ]
    assert caplog.records[0].pod == "default/a"


@pytest.mark.parametrize(
    ("on_node_limit", "evicted"), [("stop node", []), ("next pod", ["b", "c"])]
)
def test_the_node_limit_stops_the_node_or_skips_the_pod(on_node_limit, evicted):
    handle = FakeHandle(Refusing({"a": api.NodeLimitError("n1")}))
    assert evict_all(handle, PODS, "Plugin", on_node_limit)
    assert handle.evictor.evicted == evicted


def test_the_total_limit_stops_the_plugin():
    handle = FakeHandle(Refusing({"b": api.TotalLimitError()}))
    assert not evict_all(handle, PODS, "Plugin")
    assert handle.evictor.evicted == ["a"]
