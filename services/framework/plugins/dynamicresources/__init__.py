"""DynamicResources: Dynamic Resource Allocation (``resource.k8s.io/v1``) in the
scheduler, as upstream's ``plugins/dynamicresources`` with the structured-parameters
allocator (:mod:`.allocator`).

The plugin is :mod:`.plugin`; a pod's claims are found by :mod:`.claims`, the
allocations this replica decided live in :mod:`.inflight` until the cluster shows
them, and what Reserve decided reaches PreBind in the binder through :mod:`.binding`.
A pod's extended resources backed by DRA (DRAExtendedResource) become one more claim,
made by the plugin (:mod:`.extended`).

Not here: which devices satisfy a claim (the allocator, :mod:`.allocator`); the store's
guard of reserved devices across replicas, and publishing the claims' new status (the
scheduler and binder services).
"""

from __future__ import annotations

from typing import Final

from services.framework.api.registry import PluginEntry
from services.framework.plugins.dynamicresources.args import DynamicResourcesArgs
from services.framework.plugins.dynamicresources.plugin import NAME, DynamicResources, new

ENTRY: Final = PluginEntry(NAME, DynamicResources, new, DynamicResourcesArgs)

__all__ = ["ENTRY", "NAME", "DynamicResources", "DynamicResourcesArgs", "new"]
