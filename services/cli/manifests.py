"""Reading Kubernetes manifests (YAML or JSON, one or many documents, ``kind: List``)
into watch events, validated exactly as the informer will validate them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml

from contracts import topology
from contracts.errors import ErrorReport
from contracts.kinds import KINDS
from services.informer.validate import Accepted, validate


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


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings, as the API server's JSON has them."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}


def read_documents(
    text: str, *, event_type: str = "ADDED", source: str = "<input>"
) -> list[Document]:
    """Every object in ``text`` as a watch event, or ManifestError for the first bad one."""
    try:
        raw = [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as error:
        raise ManifestError(f"{source}: not valid YAML: {error}") from error
    documents: list[Document] = []
    for index, obj in enumerate(_flatten(raw), start=1):
        if not isinstance(obj, dict):
            raise ManifestError(f"{source}: document {index}: not an object")
        kind_name = str(obj.get("kind", ""))
        kind = kind_name.lower()
        if kind not in KINDS:
            raise ManifestError(
                f"{source}: document {index}: field kind: unknown kind {kind_name!r} "
                f"(known: {', '.join(sorted(KINDS))})"
            )
        body = msgspec.json.encode({"type": event_type, "object": obj})
        documents.append(Document(index, kind, body, topology.event_key(kind, event_type)))
    return documents


def check(document: Document, *, source: str = "<input>") -> Accepted:
    """Validate one document as the informer would; ManifestError names the field."""
    result = validate(document.body, document.routing_key)
    if isinstance(result, ErrorReport):
        name = "/".join(part for part in (result.namespace, result.name) if part)
        where = f"{result.object_kind} {name}".strip()
        field = f"field {result.field}: " if result.field else ""
        raise ManifestError(
            f"{source}: document {document.index} ({where}): {field}{result.reason}"
        )
    return result


def _flatten(docs: list[Any]) -> Iterator[Any]:
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            yield from doc.get("items") or []
        else:
            yield doc
