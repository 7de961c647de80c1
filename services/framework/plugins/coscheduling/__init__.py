"""Coscheduling: gang scheduling with PodGroups, after kubernetes-sigs/scheduler-plugins
``pkg/coscheduling`` (see :mod:`.plugin`).

Not here: the waiting-pods map the gang waits in (:mod:`services.framework.runtime`),
a PodGroup's status as its controller derives it (:mod:`services.common.podgroups`).
"""

from __future__ import annotations

from typing import Final

from services.framework.api.registry import PluginEntry
from services.framework.plugins.coscheduling.plugin import (
    NAME,
    Coscheduling,
    CoschedulingArgs,
    new,
)

ENTRY: Final = PluginEntry(NAME, Coscheduling, new, CoschedulingArgs)

__all__ = ["ENTRY", "NAME", "Coscheduling", "CoschedulingArgs", "new"]
