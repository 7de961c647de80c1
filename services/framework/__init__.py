"""The scheduling framework (upstream's ``pkg/scheduler/framework`` and its config), in
upstream's layers, high to low: config, runtime, plugins, cache, api (import-linter
enforces it: each imports only the layers below it).

Not here: a service's loop, bus or store I/O (:mod:`services.scheduler`,
:mod:`services.queue`, :mod:`services.binder`); the framework imports no service, and
what the descheduler shares with it lives in :mod:`services.common.k8s`.

- :mod:`~services.framework.config`: KubeSchedulerConfiguration decoding and defaults, and
  the in-tree registry (``pkg/scheduler/apis/config``, ``plugins/registry.go``);
- :mod:`~services.framework.runtime`: the Framework that runs a profile's plugins, and its
  filtering, scoring and sampling (``framework/runtime``, ``schedule_one.go``);
- :mod:`~services.framework.plugins`: the in-tree plugins, one per module or package;
- :mod:`~services.framework.cache`: the Cache (assume/forget) and the per-cycle Snapshot
  plugins read (``backend/cache``);
- :mod:`~services.framework.api`: extension points, CycleState, Status, PodInfo, cluster
  events, the plugin registry types (``pkg/scheduler/framework``).
"""
