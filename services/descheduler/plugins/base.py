"""What the descheduler's plugins share: the common args (``namespaces``,
``labelSelector``) and the eviction loop with upstream's reaction to each limit."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from contracts.k8s import Pod
from services.descheduler.api import EvictOptions, Handle, NodeLimitError, TotalLimitError
from services.descheduler.podutil import PodFilter, both, pod_filter

OnNodeLimit = Literal["stop node", "next pod"]


def evictable_filter(handle: Handle, args: object) -> PodFilter:
    """``podutil.NewOptions().WithFilter(Filter ∧ PreEvictionFilter)`` with the args'
    namespaces and label selector."""
    evictor = handle.evictor
    return pod_filter(
        both(evictor.filter, evictor.pre_eviction_filter),
        getattr(args, "namespaces", None),
        getattr(args, "label_selector", None),
    )


def evict_all(
    handle: Handle, pods: Iterable[Pod], plugin: str, on_node_limit: OnNodeLimit = "stop node"
) -> bool:
    """Evict ``pods`` in order. The node limit stops this node (``break loop``) or
    skips the pod (``continue``), as the plugin does upstream; other refusals skip the
    pod. Returns False once the cycle's total limit is reached (the plugin stops)."""
    for pod in pods:
        try:
            handle.evictor.evict(pod, EvictOptions(plugin))
        except NodeLimitError:
            if on_node_limit == "stop node":
                return True
        except TotalLimitError:
            return False
        except Exception:
            continue
    return True


__all__ = ["OnNodeLimit", "evict_all", "evictable_filter"]
