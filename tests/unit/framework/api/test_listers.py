"""The snapshot keeps namespaces, claims, volumes and classes current for plugins."""

from __future__ import annotations

import msgspec

from contracts.events import NamespaceEntry, PersistentVolumeClaimEntry, StorageClassEntry
from contracts.k8s import Namespace, ObjectMeta, PersistentVolumeClaim, StorageClass
from services.framework.cache.cache import Cache


def test_listers_follow_the_log_and_reload_from_the_store() -> None:
    snapshot = Cache()
    ns = Namespace(metadata=ObjectMeta(name="team-a", labels={"tier": "gold"}))
    claim = PersistentVolumeClaim(metadata=ObjectMeta(name="data", namespace="team-a"))
    fast = StorageClass(metadata=ObjectMeta(name="fast"), provisioner="csi.example.com")
    snapshot.apply(
        [
            NamespaceEntry(seq=1, type="ADDED", object=ns),
            PersistentVolumeClaimEntry(seq=2, type="ADDED", object=claim),
            StorageClassEntry(seq=3, type="ADDED", object=fast),
            StorageClassEntry(seq=4, type="DELETED", object=fast),
        ]
    )
    listers = snapshot.listers
    assert listers.namespaces["team-a"].metadata.labels == {"tier": "gold"}
    assert listers.claim("team-a", "data") == claim
    assert listers.storage_classes == {}
    assert snapshot.applied_seq == 4

    snapshot.load(
        {},
        {},
        9,
        {
            "namespace": {
                "team-b": msgspec.json.encode(Namespace(metadata=ObjectMeta(name="team-b")))
            }
        },
    )
    assert set(snapshot.listers.namespaces) == {"team-b"}
    assert snapshot.listers.claim("team-a", "data") is None
    assert snapshot.listers is listers  # plugins hold this object: it is updated in place
