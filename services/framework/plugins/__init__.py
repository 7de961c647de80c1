"""The in-tree plugins, one module or package each, named after upstream's. Each exports
``ENTRY``, its :class:`~services.framework.api.registry.PluginEntry`; the in-tree
registry is wired in :mod:`services.framework.config.in_tree`.

Not here: running plugins (:mod:`..runtime`), helpers the descheduler needs too
(:mod:`services.common.k8s`); no service imports a plugin module (import-linter checks
it).
"""
