"""The Passthrough service: the most any design could do on this broker and machine.

It consumes the same watch events the informer would (a durable queue bound to
``ksched.events`` ``pod.*``, persistent messages, the same bus edge and consumer) and
answers each pending pod's ADDED event with a Binding to one fixed node, published on
``ksched.decisions`` as ``binding.<namespace>`` with confirms, as the binder does. No
store, no projection, no scheduling: only the client's messages and their answers.

Run as its own process (``python -m bench.passthrough --amqp-url URL --namespace NS
[--metrics-port PORT]``) by ``ksched bench Passthrough`` and by ``ksched bench ... --mode
services --vs-passthrough``. It logs ``passthrough started`` once it consumes, and ends
on SIGTERM. With ``--metrics-port`` it serves ``/metrics`` with the same edge counters as
a service (``ksched_messages_published_total``, ``ksched_messages_consumed_total``), so
the bench counts its messages as it counts the services'.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

import msgspec

from contracts import topology
from contracts.k8s import Binding, ObjectMeta, ObjectReference
from services.common.bus import Delivery, Message, open_bus
from services.common.observe import EdgeMetrics, MeteredBus

NODE = "passthrough-node"
"""The node every pod is bound to."""
QUEUE = topology.QueueSpec(
    "ksched.passthrough.events",
    (topology.QueueBinding(topology.EVENTS.name, "pod.*"),),
)


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str | None = None
    uid: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str | None = None


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _Event(msgspec.Struct):
    type: str = ""
    object: _Pod = msgspec.field(default_factory=_Pod)


_decode = msgspec.json.Decoder(_Event).decode
_encode = msgspec.json.Encoder().encode


def answers(deliveries: Sequence[Delivery]) -> list[Message]:
    """A Binding to :data:`NODE` for each pending pod's ADDED event of the batch."""
    out = []
    for delivery in deliveries:
        try:
            event = _decode(delivery.body)
        except msgspec.DecodeError:
            continue
        pod = event.object
        if event.type != "ADDED" or pod.spec.node_name:
            continue
        namespace = pod.metadata.namespace or "default"
        binding = Binding(
            metadata=ObjectMeta(name=pod.metadata.name, namespace=namespace, uid=pod.metadata.uid),
            target=ObjectReference(kind="Node", name=NODE, api_version="v1"),
        )
        key = topology.decision_key("binding", namespace)
        out.append(Message(topology.DECISIONS.name, key, _encode(binding)))
    return out


async def serve(amqp_url: str, namespace: str, metrics_port: int | None = None) -> None:
    metrics = EdgeMetrics()
    bus = MeteredBus(open_bus(amqp_url, namespace=namespace), metrics)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1", registry=metrics.registry)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    async def handle(deliveries: Sequence[Delivery]) -> None:
        messages = answers(deliveries)
        if messages:
            await bus.publish(messages)

    try:
        await bus.declare([QUEUE])
        await bus.consume_raw(QUEUE, handle, max_batch=512)
        print("passthrough started", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await bus.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.passthrough")
    parser.add_argument("--amqp-url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--metrics-port", type=int, help="serve /metrics on this port")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.amqp_url, args.namespace, args.metrics_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
