"""NodePorts, from upstream's node_ports_test.go: ports as "protocol/hostIP/port"."""

from __future__ import annotations

import pytest

from contracts.k8s import ContainerPort, Pod
from services.framework.api.events import QueueingHint
from services.framework.api.interface import CycleState
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo
from services.framework.plugins.nodeports import ERR_REASON, NodePorts, after_pod_deleted, fits
from tests.builders import container, make_node, make_pod
from tests.unit.framework.helpers import snapshot_of
from tests.unit.framework.plugins.basic_plugins import filter_statuses

REJECTED = Status(Code.Unschedulable, (ERR_REASON,))


def ports(*specs: str) -> list[ContainerPort]:
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append(
            ContainerPort(
                container_port=int(port), host_port=int(port), protocol=protocol, host_ip=ip
            )
        )
    return out


def pod_with(*specs: str, name: str = "pod", node: str | None = None) -> Pod:
    return make_pod(name, requests=[container(ports=ports(*specs))], node_name=node)


CASES = [
    pytest.param((), (), True, id="nothing running"),
    pytest.param(("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), True, id="other port"),
    pytest.param(("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), False, id="same udp port"),
    pytest.param(("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False, id="same tcp port"),
    pytest.param(("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), True, id="different host ip"),
    pytest.param(("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True, id="different protocol"),
    pytest.param(
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        False,
        id="second udp port conflict",
    ),
    pytest.param(
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        False,
        id="first tcp port conflict",
    ),
    pytest.param(
        ("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), False, id="conflict with 0.0.0.0 wanted"
    ),
    pytest.param(
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        False,
        id="TCP hostPort conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(
        ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False, id="conflict with 0.0.0.0 used"
    ),
    pytest.param(
        ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True, id="second different protocol"
    ),
    pytest.param(
        ("UDP/127.0.0.1/8001",),
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        False,
        id="UDP hostPort conflict due to 0.0.0.0 hostIP",
    ),
    pytest.param(("/127.0.0.1/8080",), ("TCP//8080",), False, id="empty protocol is TCP"),
]


@pytest.mark.parametrize(("wanted", "used", "expected_fit"), CASES)
def test_filter(wanted, used, expected_fit):
    node = make_node("n")
    bound = [pod_with(*used, name="existing", node="n")] if used else []
    statuses = filter_statuses(NodePorts(), pod_with(*wanted), [node], bound)
    assert statuses == [None if expected_fit else REJECTED]
    assert fits(pod_with(*wanted), bound) == expected_fit


def test_pre_filter_skips_pods_without_host_ports():
    state, pod = CycleState(), PodInfo.of(make_pod(containers=1))
    table = snapshot_of([make_node("n")]).snapshot()
    _, status = NodePorts().pre_filter(state, pod, table)
    assert status.is_skip()


def test_only_nodes_with_conflicts_are_rejected():
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    bound = [pod_with("TCP/0.0.0.0/80", name="web", node="b")]
    statuses = filter_statuses(NodePorts(), pod_with("TCP//80"), nodes, bound)
    assert statuses == [None, REJECTED, None]


def test_restartable_init_containers_hold_ports():
    sidecar_pod = make_pod(
        "side",
        node_name="n",
        init=[container(ports=ports("TCP/0.0.0.0/53"), restart_policy="Always")],
    )
    plain_init = make_pod("init", node_name="m", init=[container(ports=ports("TCP/0.0.0.0/53"))])
    nodes = [make_node("n"), make_node("m")]
    statuses = filter_statuses(
        NodePorts(), pod_with("TCP/0.0.0.0/53"), nodes, [sidecar_pod, plain_init]
    )
    assert statuses == [REJECTED, None]


def test_queueing_hint_after_pod_deleted():
    pod = pod_with("TCP/0.0.0.0/80")
    holder = pod_with("TCP/0.0.0.0/80", name="holder", node="n")
    other_port = pod_with("TCP/0.0.0.0/81", name="other", node="n")
    unscheduled = pod_with("TCP/0.0.0.0/80", name="pending")
    assert after_pod_deleted(pod, holder, None) == QueueingHint.Queue
    assert after_pod_deleted(pod, other_port, None) == QueueingHint.QueueSkip
    assert after_pod_deleted(pod, unscheduled, None) == QueueingHint.QueueSkip
