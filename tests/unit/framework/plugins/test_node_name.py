"""NodeName, from upstream's node_name_test.go."""

from __future__ import annotations

import pytest

from services.framework.api.status import Code, Status
from services.framework.plugins.nodename import ERR_REASON, NodeName
from tests.builders import make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import filter_statuses

REJECTED = Status(Code.UnschedulableAndUnresolvable, (ERR_REASON,))


@pytest.mark.parametrize(
    ("node_name", "expected"),
    [
        pytest.param(None, [None, None], id="no host specified"),
        pytest.param("foo", [None, REJECTED], id="host matches"),
        pytest.param("bar", [REJECTED, None], id="host doesn't match"),
        pytest.param("gone", [REJECTED, REJECTED], id="no such node"),
    ],
)
def test_filter(node_name, expected):
    nodes = [make_node("foo"), make_node("bar")]
    assert filter_statuses(NodeName(), make_pod(node_name=node_name), nodes) == expected
