"""The in-tree plugins, one module or package each, named after upstream's. Each exports
``ENTRY``, its :class:`~services.framework.api.registry.PluginEntry`; the in-tree
registry is wired in :mod:`services.framework.config.in_tree`."""
