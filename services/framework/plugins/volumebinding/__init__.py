"""VolumeBinding: binds (or provisions) the pod's claims as part of scheduling it.

Not here: claim, class and node-selector lookups other volume plugins share
(:mod:`..volumehelpers`).

The plugin is :mod:`.plugin`; :func:`claim_bindings` hands Reserve's decisions to the
BindRequest, which the binder applies before the Binding (see :mod:`.prebind`).
"""

from __future__ import annotations

from typing import Final

from services.framework.api.registry import PluginEntry
from services.framework.plugins.volumebinding.args import VolumeBindingArgs
from services.framework.plugins.volumebinding.plugin import NAME, VolumeBinding, claim_bindings, new

ENTRY: Final = PluginEntry(NAME, VolumeBinding, new, VolumeBindingArgs)

__all__ = ["ENTRY", "NAME", "VolumeBinding", "VolumeBindingArgs", "claim_bindings", "new"]
