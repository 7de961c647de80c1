"""``-o json|yaml`` for commands whose output is Kubernetes objects (``ksched watch``):
json is one object per line, yaml one document per object, as ``kubectl get -w -o``."""

from __future__ import annotations

import json

import yaml

OBJECT_FORMATS = ("json", "yaml")


def render_object(obj: object, output: str) -> str:
    """``obj`` (parsed JSON) in ``output`` format, ending with a newline."""
    if output == "yaml":
        return "---\n" + yaml.safe_dump(obj, sort_keys=False, allow_unicode=True)
    return json.dumps(obj) + "\n"


__all__ = ["OBJECT_FORMATS", "render_object"]
