"""``KSCHED_AMQP_URL`` as a list: the brokers of one RabbitMQ cluster, comma-separated
(``amqp://u:p@node1:5672/,amqp://u:p@node2:5672/``). A client connects to the first
that answers and, when the node it is connected to dies, to the next (round robin).

Every URL of a list names the same user, virtual host and scheme (``amqp`` or
``amqps``): they are nodes of one cluster, not different brokers. One URL is the
single-broker deployment, unchanged."""

from __future__ import annotations

from urllib.parse import urlsplit

SETTING = "amqp_url (KSCHED_AMQP_URL)"


def broker_urls(value: str) -> list[str]:
    """The URLs ``value`` lists, in order; ValueError (one line naming the setting and
    the entry, never a password) when one is empty, not amqp(s)://, repeated, or names
    another user, virtual host or scheme than the first."""
    urls = [part.strip() for part in value.split(",")]
    if len(urls) == 1:
        return urls  # one broker: its URL is checked where it is opened, as before
    first = urlsplit(urls[0])
    seen: set[tuple[str, int | None]] = set()
    for number, url in enumerate(urls, start=1):
        where = f"{SETTING}: broker {number} of {len(urls)}"
        if not url:
            raise ValueError(f"{where} is empty (a stray comma?)")
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("amqp", "amqps"):
            raise ValueError(f"{where}: not an amqp:// or amqps:// URL")
        try:
            node = (parts.hostname or "", parts.port)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        if not node[0]:
            raise ValueError(f"{where}: no host")
        if node in seen:
            raise ValueError(f"{where}: {node[0]}:{node[1] or 'default port'} is listed twice")
        seen.add(node)
        for what, mine, theirs in (
            ("scheme", parts.scheme.lower(), first.scheme.lower()),
            ("user", parts.username, first.username),
            ("virtual host", parts.path or "/", first.path or "/"),
        ):
            if mine != theirs:
                raise ValueError(
                    f"{where}: another {what} than broker 1 (the URLs name nodes of one "
                    "cluster: same scheme, user and virtual host)"
                )
    return urls
