"""The scheduler's cache (upstream's ``pkg/scheduler/backend/cache``): the
:class:`~services.framework.cache.cache.Cache` one replica keeps from the event log and
its own assumptions, and the per-cycle
:class:`~services.framework.cache.snapshot.Snapshot` (nodes in columns) plugins read."""
