"""Scheduler configuration: KubeSchedulerConfiguration (v1) → validated profiles."""

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
