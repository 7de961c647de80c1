"""kubectl dumps (List, *List, multi-document YAML, JSON), skipped kinds, unknown-field
warnings and duplicate uids in the files ``simulate`` and ``publish`` read."""

from __future__ import annotations

import json

import pytest

from services.cli.manifests import ManifestError, check, read_documents
from services.cli.simulate import load_cluster, simulate
from tests.builders import make_pod, manifest

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "demo"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
KNATIVE = {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "k"}}


def listed(kind: str, *items: dict[str, object]) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {}, "items": list(items)}


def untyped(obj: dict[str, object]) -> dict[str, object]:
    """An item of the API server's PodList: no kind, no apiVersion."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


@pytest.mark.parametrize(
    ("text", "kinds", "warning"),
    [
        pytest.param(
            json.dumps(listed("List", NODE, DEPLOYMENT, CONFIGMAP, DEPLOYMENT, SERVICE, POD)),
            ["node", "service", "pod"],
            "dump.yaml: skipped 3 objects: ConfigMap 1, Deployment 2",
            id="kubectl get all -o json",
        ),
        pytest.param(
            json.dumps(
                listed("PodList", untyped(POD), untyped({**POD, "metadata": {"name": "b"}}))
            ),
            ["pod", "pod"],
            None,
            id="the API server's PodList (items without kind)",
        ),
        pytest.param(
            "\n---\n".join(json.dumps(d) for d in (NODE, DEPLOYMENT, POD)),
            ["node", "pod"],
            "dump.yaml: skipped 1 object: Deployment 1",
            id="multi-document YAML",
        ),
        pytest.param(
            json.dumps([NODE, KNATIVE, SERVICE]),
            ["node", "service"],
            "dump.yaml: skipped 1 object: Service (serving.knative.dev/v1) 1",
            id="a known kind of another API group",
        ),
        pytest.param(
            "apiVersion: v1\nkind: NodeList\nitems:\n- metadata: {name: n1}\n"
            "- metadata: {name: n2}\n",
            ["node", "node"],
            None,
            id="kubectl get nodes -o yaml, items without kind",
        ),
    ],
)
def test_kubectl_dumps_load_and_unused_kinds_are_summed_up(text, kinds, warning):
    lines: list[str] = []
    documents = read_documents(text, source="dump.yaml", warn=lines.append)
    assert [d.kind for d in documents] == kinds
    assert lines == ([warning] if warning else [])
    for document in documents:
        check(document, source="dump.yaml")


KUBECTL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web",
        "namespace": "demo",
        "uid": "0b6e4a4c",
        "managedFields": [{"manager": "kubectl"}],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1"}],
    },
    "spec": {
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "terminationMessagePath": "/dev/termination-log",
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "ports": [{"containerPort": 80, "hostIP": "0.0.0.0", "protocol": "TCP"}],
            }
        ],
        "volumes": [{"name": "v", "downwardAPI": {"items": []}}],
    },
    "status": {"phase": "Pending", "podIP": "10.0.0.1", "qosClass": "BestEffort"},
}


@pytest.mark.parametrize(
    ("obj", "warnings"),
    [
        pytest.param(
            {**POD, "spec": {"nodeSelecter": {"disk": "ssd"}}},
            ['c.yaml: document 1 (pod demo/web): unknown field "spec.nodeSelecter"'],
            id="nodeSelecter",
        ),
        pytest.param(
            {**POD, "spec": {"containers": [{"name": "c", "resources": {"request": {}}}]}},
            [
                "c.yaml: document 1 (pod demo/web): unknown field "
                '"spec.containers[0].resources.request"'
            ],
            id="a typo inside a list",
        ),
        pytest.param(
            {**NODE, "spec": {"unschedulabel": True}, "status": {"capacty": {}}},
            [
                'c.yaml: document 1 (node n1): unknown field "spec.unschedulabel"',
                'c.yaml: document 1 (node n1): unknown field "status.capacty"',
            ],
            id="node",
        ),
        pytest.param(KUBECTL_POD, [], id="what kubectl prints is not unknown"),
        pytest.param(
            {**SERVICE, "spec": {"selectr": {}}}, [], id="only pods and nodes are checked"
        ),
    ],
)
def test_unknown_fields_of_pods_and_nodes_are_warned_about(obj, warnings):
    lines: list[str] = []
    (document,) = read_documents(json.dumps(obj), source="c.yaml")
    check(document, source="c.yaml", warn=lines.append)
    assert lines == warnings


def test_the_host_ip_kubectl_prints_reaches_the_pod():
    (document,) = read_documents(json.dumps(KUBECTL_POD))
    pod = check(document).object
    assert pod.spec.containers[0].ports[0].host_ip == "0.0.0.0"  # type: ignore[union-attr]


async def test_simulate_warns_about_a_typo_on_stderr(capsys):
    node = {**NODE, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}
    text = json.dumps([node, {**POD, "spec": {"nodeSelecter": {"disk": "ssd"}}}])
    records = await simulate(load_cluster(text, "c.yaml"), seed=0)
    assert 'document 2 (pod demo/web): unknown field "spec.nodeSelecter"' in capsys.readouterr().err
    assert [r.kind for r in records] == ["Binding"]


@pytest.mark.parametrize(
    ("objects", "error"),
    [
        pytest.param(
            [make_pod("a", "demo", uid="u1"), make_pod("b", "demo", uid="u1")],
            "f.yaml: document 2 (pod demo/b): field metadata.uid: uid 'u1' is already used "
            "by document 1 (pod demo/a); uids must be unique",
            id="two pods",
        ),
        pytest.param(
            [make_pod("a", "demo", uid="u1"), make_pod("a", "other", uid="u1")],
            "document 2 (pod other/a): field metadata.uid: uid 'u1' is already used "
            "by document 1 (pod demo/a)",
            id="same name in another namespace",
        ),
        pytest.param(
            [
                make_pod("a", "demo", uid="u1"),
                {"kind": "Node", "metadata": {"name": "a", "uid": "u1"}},
            ],
            "document 2 (node a): field metadata.uid: uid 'u1' is already used "
            "by document 1 (pod demo/a)",
            id="a node with a pod's uid",
        ),
        pytest.param(
            [make_pod("a", "demo", uid="u1"), make_pod("a", "demo", uid="u1")],
            None,
            id="the same object twice",
        ),
        pytest.param(
            [make_pod("a", "demo", uid="u1"), make_pod("b", "demo", uid="u2")],
            None,
            id="different uids",
        ),
    ],
)
def test_a_duplicate_uid_is_an_error_naming_both_documents(objects, error):
    text = manifest(*objects)
    if error is None:
        assert len(read_documents(text, source="f.yaml")) == len(objects)
        return
    with pytest.raises(ManifestError) as raised:
        read_documents(text, source="f.yaml")
    assert error in str(raised.value)


def spread_cluster(with_service: bool) -> str:
    """node-a holds 6 other pods, node-b 3 web pods: LeastAllocated alone prefers node-b,
    the system default spread of the web Service prefers node-a."""
    nodes = [
        {
            "kind": "Node",
            "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"}},
        }
        for n in ("node-a", "node-b")
    ]
    bound = [
        {
            "kind": "Pod",
            "metadata": {"name": f"{app}-{i}", "labels": {"app": app}},
            "spec": {"nodeName": node},
        }
        for app, node, count in (("other", "node-a", 6), ("web", "node-b", 3))
        for i in range(count)
    ]
    service = {"kind": "Service", "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}}}
    pending = {"kind": "Pod", "metadata": {"name": "web-new", "labels": {"app": "web"}}}
    objects = [*nodes, *bound, *([service] if with_service else []), pending]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


@pytest.mark.parametrize(("with_service", "node"), [(False, "node-b"), (True, "node-a")])
async def test_a_service_in_the_file_spreads_its_pods_by_system_defaults(with_service, node):
    records = await simulate(load_cluster(spread_cluster(with_service), "c.json"), seed=0)
    assert [(r.pod, r.node) for r in records] == [("default/web-new", node)]
