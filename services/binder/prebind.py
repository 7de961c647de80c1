"""VolumeBinding's PreBind, in the binder: publish the claims' bindings as watch events.

The scheduler decided them at Reserve and sent them in the BindRequest
(``volumeBindings``). For each, the volume (``spec.claimRef`` set, phase Bound) and then
the claim (bound to the volume, or annotated with the selected node for a provisioner)
go to ``ksched.events`` as MODIFIED watch events, as a PV controller's API updates
would, in the same confirmed publish as the pod's Binding; the informer records them
like any user event. ksched does not wait for a PV controller: there is none, so
``bindTimeoutSeconds`` has nothing to bound.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts import topology
from contracts.k8s import PersistentVolume, PersistentVolumeClaim
from contracts.messages import BindRequest
from services.common.bus import Message

_encoder = msgspec.json.Encoder()


class _Modified(msgspec.Struct, frozen=True):
    object: PersistentVolume | PersistentVolumeClaim
    type: Literal["MODIFIED"] = "MODIFIED"


def volume_messages(request: BindRequest, headers: dict[str, str]) -> list[Message]:
    """The watch events that apply ``request.volume_bindings``, in order."""
    messages: list[Message] = []
    for binding in request.volume_bindings:
        if binding.volume is not None:
            messages.append(_modified("persistentvolume", binding.volume, headers))
        messages.append(_modified("persistentvolumeclaim", binding.claim, headers))
    return messages


def _modified(
    kind: str, obj: PersistentVolume | PersistentVolumeClaim, headers: dict[str, str]
) -> Message:
    key = topology.event_key(kind, "MODIFIED")
    return Message(topology.EVENTS.name, key, _encoder.encode(_Modified(obj)), dict(headers))
