"""Telling the store's failures apart, for callers that must not import redis (the CLI).

A :class:`~services.common.store.base.ClusterStore` on Redis raises redis' own exceptions
when the server cannot be reached or refuses a command. :func:`store_failure` says which
of the two an exception is, or that it is not the store's. redis is never imported here:
one of its exceptions can only exist once a RedisStore has loaded it.
"""

from __future__ import annotations

import sys
from typing import Literal

StoreFailure = Literal["unreachable", "refused"]
"""``unreachable``: no connection (refused, timed out, name unknown, authentication
failed), or no master to write to (READONLY from a replica, MASTERDOWN: a failover not
over); ``refused``: connected, but Redis answered a command with an error."""


def store_failure(error: BaseException) -> StoreFailure | None:
    """What ``error`` says about the store, or None when it is not a store error."""
    exceptions = sys.modules.get("redis.exceptions")
    if exceptions is None:
        return None
    if isinstance(
        error, exceptions.ConnectionError | exceptions.TimeoutError | exceptions.ReadOnlyError
    ) or (isinstance(error, exceptions.ResponseError) and str(error).startswith("MASTERDOWN")):
        return "unreachable"
    if isinstance(error, exceptions.RedisError):
        return "refused"
    return None


__all__ = ["StoreFailure", "store_failure"]
