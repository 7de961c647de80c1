"""``Children``: a labelled metric's children, looked up once each."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram

from services.common.metrics import Children


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([("a", "x")], {("a", "x"): 1}),
        ([("a", "x"), ("a", "x"), ("b", "x")], {("a", "x"): 2, ("b", "x"): 1}),
        ([("a", "x"), ("x", "a")], {("a", "x"): 1, ("x", "a"): 1}),  # order is the label's
    ],
)
def test_children_count_into_their_series(calls, expected):
    registry = CollectorRegistry()
    counter = Counter("things", "Things.", ["kind", "where"], registry=registry)
    children = Children(counter)
    for values in calls:
        children(*values).inc()
    for (kind, where), count in expected.items():
        sample = registry.get_sample_value("things_total", {"kind": kind, "where": where})
        assert sample == count


def test_a_child_is_the_metrics_own_and_looked_up_once(monkeypatch):
    histogram = Histogram("took", "Took.", ["point"], registry=CollectorRegistry())
    children = Children(histogram)
    first = children("Bind")
    looked_up: list[tuple[str, ...]] = []
    labels = histogram.labels
    monkeypatch.setattr(histogram, "labels", lambda *v: looked_up.append(v) or labels(*v))
    assert children("Bind") is first is labels("Bind")
    children("PreBind")
    assert looked_up == [("PreBind",)]


def test_wrong_label_values_fail_as_labels_does():
    counter = Counter("things", "Things.", ["kind", "where"], registry=CollectorRegistry())
    with pytest.raises(ValueError, match="Incorrect label count"):
        Children(counter)("only-one")
