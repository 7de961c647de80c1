"""The scheduling framework, in upstream's layers (high → low, checked by import-linter):

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
