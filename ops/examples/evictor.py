"""Carry out ksched's preemptions, with plain aio-pika: delete each victim.

    python ops/examples/evictor.py --max 10 --seconds 60

Needs only the contract: each preemption is announced on exchange ``ksched.decisions``
with routing key ``preemption.<namespace>`` (a ``Preemption``: the preemptor, its
nominated node, and the victims, each with the ``DisruptionTarget`` condition to set on
it first). Against a real cluster a client would patch that condition onto each victim
and delete it; here the deletion is what ksched needs to hear about: a ``DELETED`` watch
event for each victim on exchange ``ksched.events`` with routing key ``pod.deleted``,
exactly what a Kubernetes watch would deliver once the pod is gone. The preemptor is then
scheduled on its nominated node.

This client prints ``ready`` once it listens, then one line per preemption it carries
out (``preempted NS/NAME on NODE: NS/VICTIM …``); it stops after ``--max`` preemptions or
``--seconds`` seconds, whichever comes first. ``KSCHED_AMQP_URL`` (or ``--amqp-url``) is
the broker; ``KSCHED_NAMESPACE`` (or ``--namespace``), if ksched runs under one,
prefixes the exchange names with ``<namespace>.``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

import aio_pika


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--amqp-url",
        default=os.environ.get("KSCHED_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"),
    )
    parser.add_argument("--namespace", default=os.environ.get("KSCHED_NAMESPACE", ""))
    parser.add_argument("--max", type=int, default=100, help="stop after this many preemptions")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    return parser.parse_args(argv)


def deleted(victim: dict[str, object]) -> bytes:
    """The watch event of a victim that is gone (its identity is all ksched needs)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": victim["name"],
            "namespace": victim["namespace"],
            "uid": victim["uid"],
        },
    }
    return json.dumps({"type": "DELETED", "object": pod}).encode()


async def evict(args: argparse.Namespace) -> int:
    """Delete the victims of preemptions until ``--max`` or ``--seconds``."""
    prefix = f"{args.namespace}." if args.namespace else ""
    done = 0
    connection = await aio_pika.connect_robust(args.amqp_url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        decisions = await channel.declare_exchange(
            prefix + "ksched.decisions", aio_pika.ExchangeType.TOPIC, durable=True
        )
        events = await channel.declare_exchange(
            prefix + "ksched.events", aio_pika.ExchangeType.TOPIC, durable=True
        )
        inbox = await channel.declare_queue(exclusive=True)
        await inbox.bind(decisions, "preemption.#")
        print("ready", flush=True)
        try:
            async with asyncio.timeout(args.seconds), inbox.iterator() as messages:
                async for message in messages:
                    async with message.process():
                        preemption = json.loads(message.body)
                    for victim in preemption["victims"]:
                        await events.publish(
                            aio_pika.Message(deleted(victim), content_type="application/json"),
                            routing_key="pod.deleted",
                        )
                    who = preemption["preemptor"]
                    names = " ".join(f"{v['namespace']}/{v['name']}" for v in preemption["victims"])
                    print(
                        f"preempted {who['namespace']}/{who['name']} on "
                        f"{preemption['nominatedNode']}: {names}",
                        flush=True,
                    )
                    done += 1
                    if done >= args.max:
                        break
        except TimeoutError:
            pass
    return done


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    asyncio.run(evict(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
