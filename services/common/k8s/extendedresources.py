"""Extended resources backed by DRA (DRAExtendedResource): which DeviceClass serves an
extended resource name, as upstream's ``extendedresourcecache`` (the scheduler's
``DeviceClassResolver``) answers it.

Every class serves its implicit name ``deviceclass.resource.kubernetes.io/<class>``;
a class with ``spec.extendedResourceName`` serves that name too. When several classes
name the same extended resource, the one created last serves it (a migration from one
class to another), and between classes created at the same time the lowest name.
NodeResourcesFit leaves such a resource to DynamicResources on a node whose allocatable
does not have it; DynamicResources allocates devices of the class for it.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping

from contracts.k8s import DeviceClass
from contracts.k8s.resource import DEVICE_CLASS_PREFIX
from services.common.k8s.timestamps import parse_time
from services.common.resources import is_extended_resource_name


def is_dra_extended_resource_name(name: str) -> bool:
    """``IsDRAExtendedResourceName``: an extended resource name, or an implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def device_class_mapping(classes: Iterable[DeviceClass]) -> dict[str, DeviceClass]:
    """Extended resource name → the DeviceClass that serves it."""
    mapping: dict[str, DeviceClass] = {}
    explicit: dict[str, DeviceClass] = {}
    for device_class in classes:
        mapping[DEVICE_CLASS_PREFIX + device_class.metadata.name] = device_class
        name = device_class.spec.extended_resource_name
        if name is None:
            continue
        held = explicit.get(name)
        if held is None or _preferred(device_class, held):
            explicit[name] = device_class
    # The API server refuses an explicit name with the implicit prefix, so the two
    # kinds never meet; explicit names are added last all the same.
    mapping.update(explicit)
    return mapping


def _preferred(candidate: DeviceClass, held: DeviceClass) -> bool:
    """Whether ``candidate`` rather than ``held`` serves their common name."""
    new = parse_time(candidate.metadata.creation_timestamp) or 0.0
    old = parse_time(held.metadata.creation_timestamp) or 0.0
    if new != old:
        return new > old
    return candidate.metadata.name < held.metadata.name


def backed_by_dra(resource: str, served: Container[str], allocatable: Mapping[str, int]) -> bool:
    """``ShouldDelegateResourceToDRA``: a DeviceClass serves ``resource`` (it is in
    ``served``, the names :func:`device_class_mapping` maps) and the node does not offer
    it (allocatable missing or 0): DRA, not the node, provides it."""
    return allocatable.get(resource, 0) <= 0 and resource in served
