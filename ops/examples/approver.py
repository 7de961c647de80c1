"""Approve or refuse pods waiting at Permit (ExternalPermit), with plain aio-pika.

    python ops/examples/approver.py --allow '^web-' --max 10 --seconds 60

Needs only the contract: each pod that starts waiting is announced on exchange
``ksched.decisions`` with routing key ``waiting.<namespace>`` (a ``WaitingPod``: its
namespace, name, uid, node and pending plugins with their deadlines). The answer is a
JSON ``{"namespace", "name", "uid", "plugin", "message"}`` published on exchange
``ksched.permit`` with routing key ``allow.<namespace>`` or ``reject.<namespace>``.

This approver prints ``ready`` once it listens, then allows the pods whose name matches
``--allow`` and rejects the others with ``--message`` (printing each decision); it stops
after ``--max`` decisions or ``--seconds`` seconds, whichever comes first.
``KSCHED_AMQP_URL`` (or ``--amqp-url``) is the broker; ``KSCHED_NAMESPACE`` (or
``--namespace``), if ksched runs under one, prefixes the exchange names with
``<namespace>.``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys

import aio_pika

PLUGIN = "ExternalPermit"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--amqp-url",
        default=os.environ.get("KSCHED_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"),
    )
    parser.add_argument("--namespace", default=os.environ.get("KSCHED_NAMESPACE", ""))
    parser.add_argument("--allow", default=".*", help="regular expression of pod names to allow")
    parser.add_argument("--message", default="not approved", help="the reason of a refusal")
    parser.add_argument("--max", type=int, default=100, help="stop after this many decisions")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    return parser.parse_args(argv)


async def approve(args: argparse.Namespace) -> int:
    """Answer waiting pods until ``--max`` decisions or ``--seconds``; returns how many."""
    prefix = f"{args.namespace}." if args.namespace else ""
    allow = re.compile(args.allow)
    decided = 0
    connection = await aio_pika.connect_robust(args.amqp_url)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        decisions = await channel.declare_exchange(
            prefix + "ksched.decisions", aio_pika.ExchangeType.TOPIC, durable=True
        )
        permit = await channel.declare_exchange(
            prefix + "ksched.permit", aio_pika.ExchangeType.TOPIC, durable=True
        )
        inbox = await channel.declare_queue(exclusive=True)
        await inbox.bind(decisions, "waiting.#")
        print("ready", flush=True)
        try:
            async with asyncio.timeout(args.seconds), inbox.iterator() as messages:
                async for message in messages:
                    async with message.process():
                        waiting = json.loads(message.body)
                    pending = [p["name"] for p in waiting.get("pendingPlugins", [])]
                    if PLUGIN not in pending:
                        continue
                    verdict = "allow" if allow.search(waiting["name"]) else "reject"
                    answer = {
                        "namespace": waiting["namespace"],
                        "name": waiting["name"],
                        "uid": waiting["uid"],
                        "plugin": PLUGIN,
                    }
                    if verdict == "reject":
                        answer["message"] = args.message
                    await permit.publish(
                        aio_pika.Message(
                            json.dumps(answer).encode(), content_type="application/json"
                        ),
                        routing_key=f"{verdict}.{waiting['namespace']}",
                    )
                    print(f"{verdict} {waiting['namespace']}/{waiting['name']}", flush=True)
                    decided += 1
                    if decided >= args.max:
                        break
        except TimeoutError:
            pass
    return decided


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    asyncio.run(approve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
