"""``ksched simulate CLUSTER.yaml -o annotations``: the cluster's pods after the run as
multi-document YAML (``---`` between pods), each pod the run attempted carrying
kube-scheduler-simulator's result annotations, so tools written for the simulator can
read ksched's answers.

Every Pod of the input is printed in file order: a pod bound in the input as written; a
pending pod with the annotations of its last attempt and, once bound, ``spec.nodeName``.
A pod preemption evicted is left out (the run deleted it, as the API server would). A
pod never attempted (PreEnqueue held it back to the end) is printed as written: the
simulator writes nothing before the scheduling cycle either.

Keys and shapes are the simulator's (``simulator/scheduler/plugin/annotation`` and
``resultstore/store.go``; ``storereflector`` for ``result-history``). Every value is a
JSON string as Go's ``json.Marshal`` writes it (map keys sorted, no spaces, ``<>&``
escaped), and every key is written for an attempted pod, ``{}`` when nothing ran:

- ``prefilter-result-status``: PreFilter plugin → ``success`` or its status message
  (empty for Skip); ``prefilter-result``: PreFilter plugin → the node names of the
  PreFilterResult it returned (sorted; upstream's order is a set's).
- ``filter-result``: node → Filter plugin → ``passed`` or the message of the status
  that rejected it (reasons joined with ``, ``); a node's filters stop at the first
  that rejects, a plugin whose PreFilter said Skip is absent, and a node a
  PreFilterResult left out (or every node, when PreFilter rejected the pod) is absent.
- ``postfilter-result``: node → PostFilter plugin → ``preemption victim`` for the
  node a plugin nominated; every node Filter rejected has an entry (``{}``).
- ``prescore-result``: PreScore plugin → ``success`` or its message.
- ``score-result``: node → Score plugin → the score before NormalizeScore;
  ``finalscore-result``: node → Score plugin → normalized score times weight (strings).
  Both ``{}`` when there was nothing to rank (one feasible node), as upstream.
- ``reserve-result``, ``permit-result``, ``prebind-result``, ``bind-result``: plugin →
  ``success`` (``wait`` at Permit) or the status's message; ``permit-result-timeout``:
  Permit plugin → its timeout as Go's ``Duration.String()``; ``selected-node``: the node
  Reserve ran for (empty when the attempt did not get there).
- ``result-history``: a JSON list of every attempt's annotations above, oldest first
  (dropped from the oldest while over the API's 256 KiB annotation limit).

The answers come from the explanation each decision carries (``--explain``, with its
``pluginResults``: framework.runtime.results).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

import yaml

from services.cli.embedded import DecisionRecord
from services.cli.manifests import Document

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
PREFILTER_STATUS = PREFIX + "prefilter-result-status"
PREFILTER = PREFIX + "prefilter-result"
FILTER = PREFIX + "filter-result"
POSTFILTER = PREFIX + "postfilter-result"
PRESCORE = PREFIX + "prescore-result"
SCORE = PREFIX + "score-result"
FINALSCORE = PREFIX + "finalscore-result"
RESERVE = PREFIX + "reserve-result"
PERMIT = PREFIX + "permit-result"
PERMIT_TIMEOUT = PREFIX + "permit-result-timeout"
PREBIND = PREFIX + "prebind-result"
BIND = PREFIX + "bind-result"
SELECTED_NODE = PREFIX + "selected-node"
HISTORY = PREFIX + "result-history"

PASSED = "passed"
"""A node a Filter plugin let through (upstream's ``PassedFilterMessage``)."""
PREEMPTION_VICTIM = "preemption victim"
"""The node a PostFilter plugin nominated (upstream's ``PostFilterNominatedMessage``)."""
ANNOTATION_LIMIT = 256 * 1024
"""Bytes all of an object's annotations may take (``TotalAnnotationSizeLimitB``)."""

ATTEMPTS = ("Binding", "FailedScheduling")
"""The decisions that end an attempt the simulator would write results for."""


def go_json(value: object) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, map keys sorted, ``<``,
    ``>``, ``&``, U+2028 and U+2029 escaped, other characters as UTF-8."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _filter_result(explain: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    plugins: list[str] = list(explain.get("filterPlugins", ()))
    out: dict[str, dict[str, str]] = {}
    for node, verdict in explain.get("filter", {}).items():
        if verdict == PASSED:
            out[node] = dict.fromkeys(plugins, PASSED)
            continue
        rejector = verdict.get("plugin", "")
        if rejector not in plugins:  # left out by PreFilter: no filter ran on it
            continue
        ran = plugins[: plugins.index(rejector)]
        out[node] = {**dict.fromkeys(ran, PASSED), rejector: ", ".join(verdict.get("reasons", ()))}
    return out


def _post_filter_result(
    filtered: Mapping[str, Mapping[str, str]], post_filter: Mapping[str, str]
) -> dict[str, dict[str, str]]:
    """Upstream gives each PostFilter plugin the nodes Filter rejected (its NodeToStatus's
    explicit nodes): each gets an entry, the nominated one the plugin's."""
    if not post_filter:
        return {}
    rejected = [node for node, said in filtered.items() if any(v != PASSED for v in said.values())]
    out: dict[str, dict[str, str]] = {node: {} for node in rejected}
    for plugin, nominated in post_filter.items():
        if nominated in out:
            out[nominated][plugin] = PREEMPTION_VICTIM
    return out


def _scores(explain: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {
        node: {name: str(s["weighted"]) for name, s in scored.get("plugins", {}).items()}
        for node, scored in explain.get("score", {}).items()
    }


def attempt_annotations(explain: Mapping[str, Any]) -> dict[str, str]:
    """The simulator's annotations for one explained attempt (without the history)."""
    results: Mapping[str, Any] = explain.get("pluginResults", {})
    filtered = _filter_result(explain)
    raw = {
        node: {name: str(score) for name, score in plugins.items()}
        for node, plugins in results.get("score", {}).items()
    }
    values: dict[str, object] = {
        PREFILTER: results.get("preFilterResult", {}),
        PREFILTER_STATUS: results.get("preFilter", {}),
        FILTER: filtered,
        POSTFILTER: _post_filter_result(filtered, results.get("postFilter", {})),
        PRESCORE: results.get("preScore", {}),
        SCORE: raw,
        FINALSCORE: _scores(explain),
        RESERVE: results.get("reserve", {}),
        PERMIT: results.get("permit", {}),
        PERMIT_TIMEOUT: results.get("permitTimeout", {}),
        PREBIND: results.get("preBind", {}),
        BIND: results.get("bind", {}),
    }
    out = {key: go_json(value) for key, value in values.items()}
    out[SELECTED_NODE] = str(results.get("selectedNode", ""))
    return out


def history(attempts: Sequence[Mapping[str, str]]) -> str:
    """``result-history``: every attempt's annotations, the oldest dropped first while
    the list is over :data:`ANNOTATION_LIMIT` bytes (as the simulator's reflector)."""
    kept = list(attempts)
    while kept:
        text = go_json(kept)
        if len(text.encode()) <= ANNOTATION_LIMIT:
            return text
        kept = kept[1:]
    return "[]"


def pod_annotations(records: Iterable[DecisionRecord]) -> dict[str, dict[str, str]]:
    """Pod (``namespace/name``) → the simulator's annotations after its last attempt,
    for every pod with an explained Binding or FailedScheduling among ``records``."""
    attempts: dict[str, list[dict[str, str]]] = {}
    for record in records:
        if record.kind in ATTEMPTS and record.explain is not None:
            attempts.setdefault(record.pod, []).append(attempt_annotations(record.explain))
    return {pod: {**made[-1], HISTORY: history(made)} for pod, made in attempts.items()}


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def annotated_pods(
    documents: Sequence[Document], records: Sequence[DecisionRecord]
) -> list[dict[str, Any]]:
    """The input's Pods in file order after the run: each attempted pod with its
    annotations and, if bound, its node; preemption's victims left out."""
    annotations = pod_annotations(records)
    bound: dict[str, str | None] = {}
    """Pod → its node, or None once preemption evicted it (the last of the two counts)."""
    for record in records:
        if record.kind == "Binding":
            bound[record.pod] = record.node
        elif record.kind == "Preemption":
            bound.update(dict.fromkeys(record.victims))
    pods: list[dict[str, Any]] = []
    for document in sorted(documents, key=lambda d: d.index):
        if document.kind != "pod":
            continue
        key = _key(document.raw)
        if key in bound and bound[key] is None:
            continue
        pod = dict(document.raw)
        if key in annotations:
            meta = dict(pod.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations[key]}
            pod["metadata"] = meta
        if node := bound.get(key):
            pod["spec"] = {**(pod.get("spec") or {}), "nodeName": node}
        pods.append(pod)
    return pods


def print_annotated(
    documents: Sequence[Document], records: Sequence[DecisionRecord], out: TextIO
) -> None:
    """:func:`annotated_pods` as multi-document YAML."""
    pods = annotated_pods(documents, records)
    out.write(yaml.safe_dump_all(pods, sort_keys=False, allow_unicode=True, width=1 << 16))
    out.flush()
