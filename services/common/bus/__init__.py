"""The bus edge: the Bus Protocol, MemoryBus and RabbitBus, typed consumers
(``Received[T]``) and their tracing. ``open_bus(url)`` picks the implementation:
``memory://`` or ``amqp://``.

Not here: what travels on the bus (:mod:`contracts.topology`, :mod:`contracts.messages`)
or what a consumer does with it (the services). aio-pika is imported nowhere else
(import-linter checks it).
"""

from services.common.bus.base import (
    BatchHandler,
    Bus,
    BusError,
    BusRefused,
    Consumer,
    Delivery,
    Handler,
    Message,
    Received,
    Rejection,
    decoding,
)
from services.common.bus.memory import MemoryBus
from services.common.tls import NO_TLS_FILES, TLSFiles


def open_bus(
    url: str, *, namespace: str = "", tls: TLSFiles = NO_TLS_FILES, quorum: bool = False
) -> Bus:
    """The bus for ``url``: :class:`MemoryBus` for ``memory://``, ``RabbitBus`` for
    ``amqp://`` and ``amqps://`` (aio-pika is imported only then). No I/O happens here;
    a RabbitBus connects on first use. ``namespace`` prefixes every exchange and queue
    name on the broker (see ``RabbitBus``); ``tls`` (CA, client certificate and key) is
    used by ``amqps://``; ``quorum``: durable queues are quorum queues (a cluster)."""
    scheme = url.partition("://")[0].lower()
    if scheme == "memory":
        return MemoryBus(namespace=namespace)
    if scheme in ("amqp", "amqps"):
        from services.common.bus.rabbit import RabbitBus

        return RabbitBus(url, namespace=namespace, tls=tls, quorum=quorum)
    raise ValueError(f"unsupported bus URL scheme {scheme!r} (use memory:// or amqp://)")


__all__ = [
    "BatchHandler",
    "Bus",
    "BusError",
    "BusRefused",
    "Consumer",
    "Delivery",
    "Handler",
    "MemoryBus",
    "Message",
    "Received",
    "Rejection",
    "decoding",
    "open_bus",
]
