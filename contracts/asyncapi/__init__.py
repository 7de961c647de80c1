"""The AsyncAPI 3.0.0 document of ksched (``ksched asyncapi``), generated from the
contracts: what it adds is the part the code cannot say by itself, which message travels
where and who publishes or consumes it.

Not here: a channel or a schema written by hand: channels come from
:mod:`contracts.topology` (exchanges, queues, routing-key functions), schemas from the
msgspec Structs via :func:`msgspec.json.schema_components`.

Reading the document:

- One channel per exchange (``is: routingKey``; the address is the routing key, with
  parameters where it varies) and one per queue (``is: queue``; the address is the queue
  name, the exchange bindings are under ``x-bindings``).
- Operations tagged ``client`` are what a ksched user does: publish watch events, receive
  decisions and errors. Operations tagged ``internal`` are the hops between ksched's own
  services (named after the service that performs them); users never publish there.
  ``operator`` operations are for whoever watches the dead letters.
"""

from __future__ import annotations

import importlib.metadata

from contracts.asyncapi._base import ASYNCAPI_VERSION, JSON, SERVER
from contracts.asyncapi.channels import _channels, channel_id
from contracts.asyncapi.messages import _messages, _schemas
from contracts.asyncapi.operations import _operations

__all__ = ["ASYNCAPI_VERSION", "asyncapi_document", "channel_id"]


def asyncapi_document() -> JSON:
    """The AsyncAPI 3.0.0 document as a JSON-serialisable dict."""
    refs, schemas = _schemas()
    messages = _messages(refs)
    channels = _channels(messages)
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "ksched",
            "version": _version(),
            "description": _INFO,
            "license": {"name": "Apache-2.0"},
        },
        "defaultContentType": "application/json",
        "servers": {
            SERVER: {
                "host": "127.0.0.1:5672",
                "protocol": "amqp",
                "protocolVersion": "0.9.1",
                "description": "RabbitMQ (compose.yaml publishes it on this port).",
            }
        },
        "channels": channels,
        "operations": _operations(channels),
        "components": {"schemas": schemas, "messages": messages},
    }


_INFO = """\
kube-scheduler rebuilt as asyncio services over RabbitMQ and Redis.

Publish Kubernetes watch events (`{"type": "ADDED", "object": <Pod JSON>}`) on
`ksched.events` with routing key `<kind>.<type>` (`pod.added`); receive Bindings and
Events on `ksched.decisions` (`binding.<namespace>`, `event.<namespace>`) and rejected
input on `ksched.errors` (`error.<kind>`).

Objects are Kubernetes-shaped: camelCase, unknown fields ignored, resource quantities
(`100m`, `1Gi`) as strings or numbers. Trace context travels in the `traceparent` and
`tracestate` AMQP headers. Internal hops carry batches, one message per "whatever is
ready now".

Operations tagged `client` are what a user does; `internal` ones document the hops
between ksched's services, named after the service that performs them."""


def _version() -> str:
    try:
        return importlib.metadata.version("ksched")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"
