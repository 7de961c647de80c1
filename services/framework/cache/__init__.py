"""The scheduler's cache (upstream's ``pkg/scheduler/backend/cache``): the
:class:`~services.framework.cache.cache.Cache` one replica keeps from the event log and
its own assumptions (assume/forget/expire), and the per-cycle
:class:`~services.framework.cache.snapshot.Snapshot` (nodes in NumPy columns;
with_pods/without_pods) plugins read.

Not here: scheduling decisions (:mod:`..runtime`, :mod:`..plugins`), state shared between
replicas (the store, :mod:`services.common.store`).
"""
