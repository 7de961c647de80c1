"""DefaultBinder: bind the pod to the chosen node with a v1 Binding.

In ksched the binding itself is the binder service's job: it publishes the Binding
decision for every pod whose profile binds with DefaultBinder. The plugin is here so
profiles carry a Bind plugin, as upstream requires, under the name users configure.
"""

from __future__ import annotations

from typing import Final

from services.framework.api.interface import BindPlugin, CycleState, Handle
from services.framework.api.registry import PluginEntry
from services.framework.api.status import Code, Status
from services.framework.api.types import PodInfo

NAME: Final = "DefaultBinder"


class DefaultBinder(BindPlugin):
    name: Final = NAME

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Not called in-process: returns Skip so another Bind plugin could act."""
        return Status(Code.Skip)


def new(args: None, handle: Handle) -> DefaultBinder:
    return DefaultBinder()


ENTRY: Final = PluginEntry(NAME, DefaultBinder, new)
