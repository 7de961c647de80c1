"""``ksched deschedule`` on hand-written clusters: pods without ``metadata.uid`` get the
uid ``simulate`` gives them (and are evicted as upstream would), and every pod the
evictor refuses is listed with upstream's reason (json, table at ``-v``) and counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.cli.main import main

EXAMPLES = Path(__file__).parents[3] / "ops" / "examples"


def node(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, on: str, owner: str | None = "ReplicaSet", **extra: Any) -> dict[str, Any]:
    """A pod as people write it: no uid; owned by ``owner`` (None: a bare pod)."""
    meta: dict[str, Any] = {"name": name, "namespace": "demo", "labels": {"app": name}}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner", "uid": f"{name}-o"}
        ]
    spec = {"nodeName": on, "containers": [{"name": "c", "image": "nginx"}], **extra}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def pdb(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": 0},
    }


def policy(plugins: list[str], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **top,
        "profiles": [{"name": "default", "plugins": {"deschedule": {"enabled": plugins}}}],
    }


TAINTED = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
TAINTS = ["RemovePodsViolatingNodeTaints"]
BALANCE = {
    **policy([]),
    "profiles": [{
        "name": "default",
        "pluginConfig": [{
            "name": "LowNodeUtilization",
            "args": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
        }],
        "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
    }],
}  # fmt: skip


def deschedule(
    tmp_path: Path, objects: list[dict[str, Any]] | Path, rules: dict[str, Any], *flags: str
) -> str:
    if isinstance(objects, Path):
        cluster = objects
    else:
        cluster = tmp_path / "cluster.yaml"
        cluster.write_text("\n---\n".join(json.dumps(o) for o in objects))
    (tmp_path / "policy.yaml").write_text(json.dumps(rules))
    argv = ["deschedule", str(cluster), "--policy", str(tmp_path / "policy.yaml"), *flags]
    assert main(argv) == 0


@pytest.mark.parametrize(
    ("objects", "rules", "evicted", "refused"),
    [
        pytest.param(
            [node("n1", **TAINTED), node("n2"), pod("web-1", "n1"), pod("web-2", "n2")],
            policy(TAINTS), ["demo/web-1"], {}, id="no-uid-evicted-as-upstream",
        ),
        pytest.param(
            [node("n1", **TAINTED), node("n2"), pod("web-1", "n1"), pod("web-2", "n1")],
            policy(TAINTS, maxNoOfPodsToEvictPerNode=1), ["demo/web-1"],
            {"demo/web-2": ["maximum number of evicted pods per node reached"]},
            id="node-limit",
        ),
        pytest.param(
            [node("n1", **TAINTED), node("n2"), pod("bare", "n1", owner=None),
             pod("ds", "n1", owner="DaemonSet")],
            policy(TAINTS), [],
            {"demo/bare": ["pod does not have any ownerRefs"],
             "demo/ds": ["daemonset pods are protected against eviction"]},
            id="default-evictor-filter",
        ),
        pytest.param(
            [node("n1", **TAINTED), node("n2"), pod("web-1", "n1"), pdb("web", "web-1")],
            policy(TAINTS), [],
            {"demo/web-1": [
                "Cannot evict pod as it would violate the pod's disruption budget \"web\"."
            ]},
            id="disruption-budget",
        ),
        pytest.param(
            EXAMPLES / "cluster.yaml", BALANCE, [],
            {"demo/database": ["pod does not have any ownerRefs"]},
            id="ops-examples-cluster",
        ),
    ],
)  # fmt: skip
def test_json_lists_evictions_then_each_refused_pod_with_its_reasons(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objects: list[dict[str, Any]] | Path,
    rules: dict[str, Any],
    evicted: list[str],
    refused: dict[str, list[str]],
) -> None:
    deschedule(tmp_path, objects, rules, "-o", "json")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["pod"] for line in lines if line["kind"] == "Eviction"] == evicted
    assert {
        line["pod"]: line["reasons"] for line in lines if line["kind"] == "NotEvicted"
    } == refused
    assert [line["kind"] for line in lines] == ["Eviction"] * len(evicted) + ["NotEvicted"] * len(
        refused
    )


REFUSING = [
    node("n1", **TAINTED),
    node("n2"),
    pod("bare", "n1", owner=None),
    pod("ds", "n1", owner="DaemonSet"),
    pod("lone", "n1", owner=None),
    pod("web-1", "n1"),
]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param((), [
            "EVICTED     NODE  PROFILE  PLUGIN",
            "demo/web-1  n1    default  RemovePodsViolatingNodeTaints",
            "",
            "1 evicted on 2 nodes",
            "3 pods not evicted (-v lists them): pod does not have any ownerRefs (2); "
            "daemonset pods are protected against eviction (1)",
        ], id="count"),
        pytest.param(("-v",), [
            "EVICTED     NODE  PROFILE  PLUGIN",
            "demo/web-1  n1    default  RemovePodsViolatingNodeTaints",
            "",
            "NOT EVICTED  NODE  REASONS",
            "demo/bare    n1    pod does not have any ownerRefs",
            "demo/ds      n1    daemonset pods are protected against eviction",
            "demo/lone    n1    pod does not have any ownerRefs",
            "",
            "1 evicted on 2 nodes",
            "3 pods not evicted: pod does not have any ownerRefs (2); "
            "daemonset pods are protected against eviction (1)",
        ], id="listed-at-v"),
    ],
)  # fmt: skip
def test_the_table_counts_the_refused_pods_and_lists_them_at_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], expected: list[str]
) -> None:
    deschedule(tmp_path, REFUSING, policy(TAINTS), *flags)
    assert capsys.readouterr().out.splitlines() == expected


def test_a_pod_one_profile_refuses_and_another_evicts_is_not_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Profile "strict" refuses web-1 (its labelSelector), "default" evicts it: only
    the pods that stayed are listed."""
    strict = {
        "name": "strict",
        "pluginConfig": [
            {"name": "DefaultEvictor", "args": {"labelSelector": {"matchLabels": {"tier": "x"}}}}
        ],
        "plugins": {"deschedule": {"enabled": TAINTS}},
    }
    rules = policy(TAINTS)
    rules["profiles"] = [strict, *rules["profiles"]]
    objects = [node("n1", **TAINTED), node("n2"), pod("web-1", "n1"), pod("bare", "n1", None)]
    deschedule(tmp_path, objects, rules, "-o", "json")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["kind"], line["pod"]) for line in lines] == [
        ("Eviction", "demo/web-1"),
        ("NotEvicted", "demo/bare"),
    ]
    assert lines[1]["reasons"] == [
        "pod does not have any ownerRefs",
        "pod labels do not match the labelSelector filter in the policy parameter",
    ]
