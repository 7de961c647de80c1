"""Publish a Node and a Pod to ksched with plain aio-pika, and wait for the Binding.

    KSCHED_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ python ops/examples/publish_pod.py

Needs only the contract: exchange ``ksched.events`` (topic) takes Kubernetes watch
events with routing key ``<kind>.<type>``; decisions come back on ``ksched.decisions``
(``binding.<namespace>``, ``event.<namespace>``). ``KSCHED_NAMESPACE``, if ksched runs
under one, prefixes the exchange names with ``<namespace>.``.
"""

import asyncio
import json
import os

import aio_pika

URL = os.environ.get("KSCHED_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
PREFIX = f"{os.environ['KSCHED_NAMESPACE']}." if os.environ.get("KSCHED_NAMESPACE") else ""

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker-1"},
    "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "hello", "namespace": "default", "uid": "hello-uid-1"},
    "spec": {
        "containers": [
            {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}
        ]
    },
}


async def main() -> None:
    connection = await aio_pika.connect_robust(URL)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        events = await channel.declare_exchange(
            PREFIX + "ksched.events", aio_pika.ExchangeType.TOPIC, durable=True
        )
        decisions = await channel.declare_exchange(
            PREFIX + "ksched.decisions", aio_pika.ExchangeType.TOPIC, durable=True
        )
        inbox = await channel.declare_queue(exclusive=True)
        await inbox.bind(decisions, "binding.default")

        for kind, obj in (("node", NODE), ("pod", POD)):
            body = json.dumps({"type": "ADDED", "object": obj}).encode()
            message = aio_pika.Message(body, content_type="application/json")
            await events.publish(message, routing_key=f"{kind}.added")

        async with inbox.iterator() as messages:
            async for message in messages:
                async with message.process():
                    binding = json.loads(message.body)
                    if binding["metadata"]["name"] == "hello":
                        print(f"hello bound to {binding['target']['name']}")
                        return


if __name__ == "__main__":
    asyncio.run(main())
