"""Reading Kubernetes manifests (YAML or JSON, one or many documents, ``kind: List`` or
any ``*List`` such as ``kubectl get pods -o yaml`` prints) into watch events, validated
exactly as the informer will validate them.

Objects of kinds ksched does not use (Deployments, ConfigMaps, …, or a known kind from
another API group) are skipped with one summary line; two documents with the same
``metadata.uid`` but different objects are an error, as the API server never hands out a
uid twice. :func:`check` also warns about the fields of a Pod or Node that Kubernetes
does not define (``spec.nodeSelecter``), as kubectl does.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import yaml

from contracts import topology
from contracts.errors import ErrorReport
from contracts.k8s.fields import unknown_fields
from contracts.kinds import KINDS, NAMESPACED
from services.informer.limits import MAX_NESTING_DEPTH
from services.informer.validate import Accepted, nesting_depth, validate

Warn = Callable[[str], None]
"""Where a warning line goes (standard error unless a caller says otherwise)."""

_WARNED_KINDS = ("pod", "node")
"""Kinds whose unknown fields are warned about: the objects users write by hand."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


class ManifestError(ValueError):
    """A document that is not a valid object; the message names the document and field."""


@dataclass(frozen=True, slots=True)
class Document:
    index: int
    """1-based position of the document in the file (items of a List count separately)."""
    kind: str
    body: bytes
    """The watch event ``{"type": ..., "object": ...}`` as JSON."""
    routing_key: str
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The object as written, for :func:`check`'s unknown-field warnings."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as the API server's JSON has them."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}

_API_GROUPS = {kind: cls().api_version.rpartition("/")[0] for kind, cls in KINDS.items()}
"""The API group of each kind (``""`` for core/v1): a Knative ``Service`` is not a Service."""

_KIND_IN_GROUP = {("podgroup", "scheduling.k8s.io"): "schedulingpodgroup"}
"""(lower-case ``kind``, API group) → routing kind, where a wire kind names two structs:
the native PodGroup is ``schedulingpodgroup``, scheduler-plugins' keeps ``podgroup``."""


def read_documents(
    text: str, *, event_type: str = "ADDED", source: str = "<input>", warn: Warn = _stderr
) -> list[Document]:
    """Every object in ``text`` as a watch event, or ManifestError for the first bad one.
    Objects of kinds ksched does not use are skipped, summed up in one ``warn`` line."""
    documents: list[Document] = []
    skipped: Counter[str] = Counter()
    uids: dict[str, tuple[int, str]] = {}
    for index, (obj, item) in enumerate(_flatten(_parse(text, source), source), start=1):
        where = item or f"document {index}"
        if not isinstance(obj, dict):
            raise ManifestError(f"{source}: {where}: not an object")
        kind_name = obj.get("kind")
        if not kind_name or not isinstance(kind_name, str):
            raise ManifestError(f"{source}: {where}: field kind: is required")
        kind = kind_name.lower()
        api_version = obj.get("apiVersion")
        if isinstance(api_version, str):
            kind = _KIND_IN_GROUP.get((kind, api_version.rpartition("/")[0]), kind)
        if kind not in KINDS:
            skipped[kind_name] += 1
            continue
        if isinstance(api_version, str) and api_version.rpartition("/")[0] != _API_GROUPS[kind]:
            skipped[f"{kind_name} ({api_version})"] += 1
            continue
        _check_uid(obj, kind, index, uids, source)
        body = msgspec.json.encode({"type": event_type, "object": obj})
        documents.append(Document(index, kind, body, topology.event_key(kind, event_type), obj))
    if skipped:
        total = sum(skipped.values())
        counts = ", ".join(f"{name} {n}" for name, n in sorted(skipped.items()))
        warn(f"{source}: skipped {total} object{'s' if total != 1 else ''}: {counts}")
    return documents


def check(document: Document, *, source: str = "<input>", warn: Warn = _stderr) -> Accepted:
    """Validate one document as the informer would; ManifestError names the field. For a
    Pod or Node, ``warn`` each field Kubernetes does not define (the informer ignores it)."""
    result = validate(document.body, document.routing_key)
    if isinstance(result, ErrorReport):
        where = _where(result.object_kind, result.namespace, result.name)
        field = f"field {result.field}: " if result.field else ""
        raise ManifestError(
            f"{source}: document {document.index} ({where}): {field}{result.reason}"
        )
    if result.kind in _WARNED_KINDS and document.raw:
        meta = result.object.metadata
        where = _where(result.kind, meta.namespace, meta.name)
        for path in unknown_fields(document.raw, KINDS[result.kind]):
            warn(f'{source}: document {document.index} ({where}): unknown field "{path}"')
    return result


def _where(kind: str, namespace: str | None, name: str | None) -> str:
    named = "/".join(part for part in (namespace, name) if part)
    return f"{kind} {named}".strip()


def _check_uid(
    obj: Mapping[str, Any],
    kind: str,
    index: int,
    uids: dict[str, tuple[int, str]],
    source: str,
) -> None:
    """ManifestError if ``obj`` has a uid an earlier, different object of the file has.
    The same object twice (a later version of it) is not a duplicate."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("uid"), str) or not meta["uid"]:
        return
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    if kind in NAMESPACED:
        namespace = namespace if isinstance(namespace, str) and namespace else "default"
    what = _where(kind, namespace if kind in NAMESPACED else None, name)
    uid = meta["uid"]
    first = uids.setdefault(uid, (index, what))
    if first[1] != what:
        raise ManifestError(
            f"{source}: document {index} ({what}): field metadata.uid: uid {uid!r} is "
            f"already used by document {first[0]} ({first[1]}); uids must be unique"
        )


def _parse(text: str, source: str) -> list[Any]:
    # The same bound as on the bus: a recursive parser fed hostile nesting would raise
    # RecursionError (or exhaust the stack) instead of naming the problem.
    depth = nesting_depth(text.encode("utf-8", "surrogatepass"))
    if depth > MAX_NESTING_DEPTH:
        raise ManifestError(f"{source}: nested {depth} levels deep, more than {MAX_NESTING_DEPTH}")
    if text.lstrip().startswith(("{", "[")):
        try:
            parsed = msgspec.json.decode(text)
        except msgspec.DecodeError:
            pass  # not JSON after all: YAML (a flow mapping) or an error it names
        else:
            return parsed if isinstance(parsed, list) else [parsed]
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.MarkedYAMLError as error:  # named by its own file, line and column
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        problem = error.problem or error.context or "cannot parse"
        raise ManifestError(f"{where}: not valid YAML: {problem}") from error
    except yaml.YAMLError as error:
        raise ManifestError(f"{source}: not valid YAML: {error}") from error
    except RecursionError:
        raise ManifestError(f"{source}: not valid YAML: nested too deeply") from None


def _flatten(docs: list[Any], source: str) -> Iterator[tuple[Any, str]]:
    """Documents, with the items of a ``List`` / ``PodList`` / … in their place, in
    order; each with how a message names it when it is a List's item (else ``""``).
    A List inside a List is ManifestError, as kubectl never writes one."""
    for number, doc in enumerate(docs, start=1):
        if not _is_list(doc):
            yield doc, ""
            continue
        kind: str = doc["kind"]
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(f"{source}: document {number} ({kind}): field items: not a list")
        # The API server's PodList leaves out each item's kind; kubectl fills it in.
        implied = {"kind": kind[: -len("List")]}
        if isinstance(doc.get("apiVersion"), str):
            implied["apiVersion"] = doc["apiVersion"]
        for position, item in enumerate(items, start=1):
            where = f"item {position} of the {kind} in document {number}"
            if _is_list(item):
                raise ManifestError(
                    f"{source}: {where}: a {item['kind']} inside a {kind}: Lists do not nest"
                )
            if isinstance(item, dict) and "kind" not in item and kind != "List":
                yield {**implied, **item}, where
            else:
                yield item, where


def _is_list(obj: Any) -> bool:
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and "items" in obj
