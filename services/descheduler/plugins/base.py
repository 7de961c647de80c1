"""What the descheduler's plugins share: the pods their args select, and one eviction
step that sorts the evictor's answer as upstream's plugins do.

Upstream's plugins each write the same ``switch err.(type)`` after ``Evict``: the node
limit (``EvictionNodeLimitError``) ends the node's pods (``break loop``) or, in a list
that spans nodes, moves on to the next pod (``continue loop``); the total limit
(``EvictionTotalLimitError``) ends the plugin (``return nil``); any other refusal (the
namespace limit, a PodDisruptionBudget, a pod already being evicted) is logged
(``logger.Error(err, "eviction failed")``) and the next pod is tried. :func:`evict`
is that step, once; :func:`evict_all` the plain loop over it. ksched logs the refusal
at INFO: the service shows it, and ``ksched deschedule`` (WARNING and above) prints
what it printed before; each refusal is also counted in ``descheduler_pods_evicted``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from typing import Literal

from contracts.k8s import LabelSelector, Pod
from services.common.logs import POD
from services.descheduler.api import (
    EvictionError,
    EvictOptions,
    Handle,
    NodeLimitError,
    TotalLimitError,
)
from services.descheduler.podutil import Namespaces, PodFilter, both, key, pod_filter

log = logging.getLogger("ksched.descheduler")

OnNodeLimit = Literal["stop node", "next pod"]


class Outcome(enum.Enum):
    """What one eviction came to, as the plugin reacts to it."""

    EVICTED = "evicted"
    NODE_LIMIT = "node limit"
    """``EvictionNodeLimitError``: no more evictions from this pod's node."""
    TOTAL_LIMIT = "total limit"
    """``EvictionTotalLimitError``: no more evictions this cycle; the plugin stops."""
    FAILED = "failed"
    """Any other refusal, logged; the plugin tries its next pod."""


def evictable_filter(
    handle: Handle, namespaces: Namespaces | None, label_selector: LabelSelector | None = None
) -> PodFilter:
    """``podutil.NewOptions().WithFilter(Filter ∧ PreEvictionFilter)`` with the args'
    namespaces and label selector."""
    evictor = handle.evictor
    return pod_filter(both(evictor.filter, evictor.pre_eviction_filter), namespaces, label_selector)


def evict(handle: Handle, pod: Pod, plugin: str) -> Outcome:
    """``Evictor().Evict`` and upstream's ``switch err.(type)`` (see the module docstring)."""
    try:
        handle.evictor.evict(pod, EvictOptions(plugin))
    except NodeLimitError:
        return Outcome.NODE_LIMIT
    except TotalLimitError:
        return Outcome.TOTAL_LIMIT
    except EvictionError as error:
        log.info("eviction failed: %s", error, extra={POD: key(pod)})
        return Outcome.FAILED
    return Outcome.EVICTED


def evict_all(
    handle: Handle, pods: Iterable[Pod], plugin: str, on_node_limit: OnNodeLimit = "stop node"
) -> bool:
    """Evict ``pods`` in order. The node limit stops this node (``break loop``) or
    skips the pod (``continue loop``), as the plugin does upstream. Returns False once
    the cycle's total limit is reached (the plugin stops)."""
    for pod in pods:
        match evict(handle, pod, plugin):
            case Outcome.NODE_LIMIT if on_node_limit == "stop node":
                return True
            case Outcome.TOTAL_LIMIT:
                return False
    return True


__all__ = ["OnNodeLimit", "Outcome", "evict", "evict_all", "evictable_filter"]
