"""Constants and shared types of the AsyncAPI document."""

from __future__ import annotations

from typing import Any, Final, Literal

from contracts.kinds import BINDING_KIND, BINDING_TYPE, KINDS

JSON = dict[str, Any]
Action = Literal["send", "receive"]

ASYNCAPI_VERSION: Final = "3.0.0"
AMQP_BINDING_VERSION: Final = "0.3.0"
SERVER: Final = "amqp"
SCHEMA_REF: Final = "#/components/schemas/{name}"
TRACE_HEADERS: Final[dict[str, str]] = {
    "traceparent": "W3C trace context of the span that published the message.",
    "tracestate": "W3C trace state, if any.",
}
"""AMQP headers every message may carry: the trace context of the publishing span."""

_WATCH_KINDS: Final[dict[str, type[Any]]] = {**KINDS, BINDING_KIND: BINDING_TYPE}
"""Every kind a user may publish on ``ksched.events`` (routing-key kind → struct)."""

_DEAD_LETTER: Final = "DeadLetter"

_EXAMPLE_POD_EVENT: Final[JSON] = {
    "type": "ADDED",
    "object": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default", "uid": "4d1f2c36"},
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    },
}
