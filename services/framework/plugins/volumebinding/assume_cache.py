"""The volumes and claims VolumeBinding assumed, laid over the listers.

Upstream's PV and PVC assume caches: Reserve assumes a volume bound to the chosen claim
(and a claim to provision on the chosen node) so the next pod, scheduled before the
binder has published anything, sees them taken. Every read goes through this overlay::

    lister object ──Reserve: assume──▶ assumed (this replica only)
         ▲                               │
         └── dropped when stale ─────────┘

An assumption is stale, and dropped at the next PreFilter, when the informer has
caught up (the listed volume has a ``claimRef``; the listed claim names a volume or a
selected node), when the listed object changed or went away, or when the pod that
made it is no longer assumed or bound on its node (its reservation expired, or the
attempt was redone). Unreserve drops it at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from contracts.k8s import PersistentVolume, PersistentVolumeClaim, namespaced_name
from services.framework.api.listers import Listers
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.volumehelpers.claims import ANN_SELECTED_NODE, volume_class

T = TypeVar("T", PersistentVolume, PersistentVolumeClaim)


@dataclass(frozen=True, slots=True)
class Assumption(Generic[T]):
    obj: T
    """The object as this replica assumes it now is."""
    base_version: str | None
    """``resourceVersion`` of the listed object it was made from."""
    pod_uid: str
    node: str


def _still_placed(nodes: Snapshot, uid: str, node: str) -> bool:
    row = nodes.index.get(node)
    return row is not None and uid in nodes.pods[row]


class AssumeCache:
    def __init__(self, listers: Listers) -> None:
        self._listers = listers
        self.volumes: dict[str, Assumption[PersistentVolume]] = {}
        """By volume name."""
        self.claims: dict[str, Assumption[PersistentVolumeClaim]] = {}
        """By ``namespace/name``."""

    # -- reads ------------------------------------------------------------------

    def volume(self, name: str) -> PersistentVolume | None:
        assumed = self.volumes.get(name)
        return assumed.obj if assumed is not None else self._listers.persistent_volumes.get(name)

    def volumes_of_class(self, class_name: str) -> list[PersistentVolume]:
        """``ListPVs``: the volumes of a class, assumed ones as assumed, by name."""
        found = [pv for pv in self._all_volumes() if volume_class(pv) == class_name]
        return sorted(found, key=lambda pv: pv.metadata.name)

    def _all_volumes(self) -> Iterator[PersistentVolume]:
        for name, listed in self._listers.persistent_volumes.items():
            assumed = self.volumes.get(name)
            yield assumed.obj if assumed is not None else listed

    def claim(self, namespace: str | None, name: str) -> PersistentVolumeClaim | None:
        assumed = self.claims.get(f"{namespace or 'default'}/{name}")
        return assumed.obj if assumed is not None else self._listers.claim(namespace, name)

    # -- writes -----------------------------------------------------------------

    def assume_volume(self, volume: PersistentVolume, pod_uid: str, node: str) -> None:
        name = volume.metadata.name
        listed = self._listers.persistent_volumes.get(name)
        base = listed.metadata.resource_version if listed is not None else None
        self.volumes[name] = Assumption(volume, base, pod_uid, node)

    def assume_claim(self, claim: PersistentVolumeClaim, pod_uid: str, node: str) -> None:
        key = namespaced_name(claim.metadata)
        listed = self._listers.claim(claim.metadata.namespace, claim.metadata.name)
        base = listed.metadata.resource_version if listed is not None else None
        self.claims[key] = Assumption(claim, base, pod_uid, node)

    def restore_volume(self, name: str, pod_uid: str) -> None:
        """``Restore``: forget the assumption if ``pod_uid`` made it."""
        if (assumed := self.volumes.get(name)) is not None and assumed.pod_uid == pod_uid:
            del self.volumes[name]

    def restore_claim(self, key: str, pod_uid: str) -> None:
        if (assumed := self.claims.get(key)) is not None and assumed.pod_uid == pod_uid:
            del self.claims[key]

    def refresh(self, nodes: Snapshot) -> None:
        """Drop stale assumptions (see the module docstring)."""
        pvs = self._listers.persistent_volumes
        _drop(
            self.volumes,
            nodes,
            lambda name: pvs.get(name),
            lambda listed: listed.spec.claim_ref is not None,
        )
        _drop(
            self.claims,
            nodes,
            lambda key: self._listers.persistent_volume_claims.get(key),
            lambda listed: bool(
                listed.spec.volume_name or ANN_SELECTED_NODE in listed.metadata.annotations
            ),
        )


def _drop(
    assumed: dict[str, Assumption[T]],
    nodes: Snapshot,
    listed_of: Callable[[str], T | None],
    caught_up: Callable[[T], bool],
) -> None:
    for key, assumption in list(assumed.items()):
        listed = listed_of(key)
        if (
            listed is None
            or caught_up(listed)
            or listed.metadata.resource_version != assumption.base_version
            or not _still_placed(nodes, assumption.pod_uid, assumption.node)
        ):
            del assumed[key]
