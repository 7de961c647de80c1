"""DefaultPreemption (PostFilter): upstream's preemption; see :mod:`.plugin`."""

from __future__ import annotations

from typing import Final

from services.framework.api.registry import PluginEntry
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from services.framework.plugins.defaultpreemption.plugin import NAME, DefaultPreemption, new

ENTRY: Final = PluginEntry(NAME, DefaultPreemption, new, DefaultPreemptionArgs)

__all__ = ["ENTRY", "NAME", "DefaultPreemption", "DefaultPreemptionArgs", "new"]
