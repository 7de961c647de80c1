"""DefaultBinder: bind the pod to the chosen node with a v1 Binding.

Upstream's DefaultBinder POSTs ``pods/binding``. In ksched the binding cycle runs in the
binder service, which publishes what the cycle's plugins leave as effects in one
confirmed publish: Bind leaves a :class:`BindEffect`, which becomes the Binding on
``ksched.decisions`` (the informer records it in the event log).
"""

from __future__ import annotations

from typing import Final

from services.framework.api.effects import BindEffect
from services.framework.api.interface import BindPlugin, CycleState, Handle
from services.framework.api.registry import PluginEntry
from services.framework.api.status import SUCCESS, Status
from services.framework.api.types import PodInfo

NAME: Final = "DefaultBinder"


class DefaultBinder(BindPlugin):
    name: Final = NAME

    async def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """Bind ``pod`` to ``node``: the binder publishes the Binding."""
        state.effects.append(BindEffect(node))
        return SUCCESS


def new(args: None, handle: Handle) -> DefaultBinder:
    return DefaultBinder()


ENTRY: Final = PluginEntry(NAME, DefaultBinder, new)
