"""A consumer's batch wait (``linger``): how long a batch's first delivery may wait for
more to join it.

Every batch a service handles costs it (and the broker, and every service downstream)
about the same whatever its size: a log append, a Redis round trip, a publish and its
confirmation, a delivery and an acknowledgement per hop. At full speed the batches are
large and that cost is shared; at a steady moderate rate each delivery would be a batch
of its own, and the same cost per pod fills the cores (``ksched bench --rate``).

So a consumer given a ``linger`` window waits, after the first delivery of a batch, up
to ``linger`` seconds from that delivery's arrival for more, and hands the batch over as
soon as it is full (``max_batch``) or the window ends. It waits only while deliveries
come closer together than the window: one that arrived ``linger`` or more after the one
before it (a quiet queue, a lone event) is handed over at once, so an idle cluster's
next pod is not held back.
"""

from __future__ import annotations


def linger_deadline(window: float, arrived: float, gap: float) -> float | None:
    """When a consumer stops waiting for deliveries to join a batch whose first one
    arrived at ``arrived`` (loop time), ``gap`` seconds after the delivery before it:
    ``arrived + window`` when the gap is shorter than the window, else None (hand the
    batch over now; also when ``window`` is 0)."""
    if window <= 0 or gap >= window:
        return None
    return arrived + window


__all__ = ["linger_deadline"]
