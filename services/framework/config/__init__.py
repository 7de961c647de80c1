"""Scheduler configuration: KubeSchedulerConfiguration (v1) strictly decoded, defaulted and
validated into profiles, and the in-tree registry that names every plugin
(``in_tree.py``).

Not here: a plugin's own args type (beside the plugin), running a profile
(:mod:`..runtime`).
"""

from services.framework.api.registry import ConfigError
from services.framework.config.defaults import DEFAULT_PLUGINS, default_profile
from services.framework.config.load import SchedulerConfig, load_config, load_profiles
from services.framework.runtime.profile import PluginRef, Plugins, PluginSet, Profile

__all__ = [
    "DEFAULT_PLUGINS",
    "ConfigError",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "SchedulerConfig",
    "default_profile",
    "load_config",
    "load_profiles",
]
