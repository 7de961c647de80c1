"""DefaultPreemption (PostFilter): upstream's preemption; see :mod:`.plugin`.

Not here: the preemption types other code reads (:mod:`services.framework.api.preemption`),
nominations (the queue's nominator and the store).
"""

from __future__ import annotations

from typing import Final

from services.framework.api.registry import PluginEntry
from services.framework.plugins.defaultpreemption.args import DefaultPreemptionArgs
from services.framework.plugins.defaultpreemption.plugin import NAME, DefaultPreemption, new

ENTRY: Final = PluginEntry(NAME, DefaultPreemption, new, DefaultPreemptionArgs)

__all__ = ["ENTRY", "NAME", "DefaultPreemption", "DefaultPreemptionArgs", "new"]
