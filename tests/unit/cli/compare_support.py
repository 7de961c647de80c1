"""Builders for the ``ksched compare`` tests: nodes and pods with cpu and memory,
scheduler configurations by scoring strategy, and files for them."""

from __future__ import annotations

from pathlib import Path

from contracts.k8s import Node, Pod
from tests.builders import make_node, make_pod, manifest


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110, **kw: object) -> Node:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    return make_node(name, allocatable=allocatable, **kw)  # type: ignore[arg-type]


def pod(name: str, cpu: str = "1", memory: str = "1Gi", **kw: object) -> Pod:
    return make_pod(name, requests={"cpu": cpu, "memory": memory}, **kw)  # type: ignore[arg-type]


def scoring(strategy: str) -> str:
    """A KubeSchedulerConfiguration whose default profile scores NodeResourcesFit with
    ``strategy`` (LeastAllocated, MostAllocated), cpu and memory weighing 1 each."""
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "  - schedulerName: default-scheduler\n"
        "    pluginConfig:\n"
        "      - name: NodeResourcesFit\n"
        "        args:\n"
        f"          scoringStrategy: {{type: {strategy}, resources: "
        "[{name: cpu, weight: 1}, {name: memory, weight: 1}]}\n"
    )


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def write_cluster(tmp_path: Path, *objects: object, name: str = "cluster.yaml") -> str:
    return write(tmp_path, name, manifest(*objects))
