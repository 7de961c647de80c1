"""The requests and container mappings of a pod's extended-resource claim, ported from
upstream's ``Test_createRequestsAndMappings_requests`` and ``..._mappings``
(extendeddynamicresources_test.go; the case names are upstream's). Containers are
named as upstream's builder names them: ``con<i>``, ``init-con<i>``, ``sidecar-con<i>``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from contracts.k8s import ContainerExtendedResourceRequest, DeviceClass, ObjectMeta, Pod
from contracts.k8s.resource import DEVICE_CLASS_PREFIX
from services.framework.plugins.dynamicresources.extended import requests_and_mappings
from tests.builders import container, make_pod, sidecar

EXT = "my-example.com/my-extended-resource"
EXT1 = EXT + "1"
INIT = EXT + "init"
IMPLICIT_INIT = DEVICE_CLASS_PREFIX + "classInit"


def pod(regular: Sequence[Mapping[str, str]], init: Sequence[object] = ()) -> Pod:
    """Regular containers ``con<i>``; init containers ``init-con<i>`` (a mapping) or
    ``sidecar-con<i>`` (a ``("sidecar", mapping)`` pair), numbered in one sequence."""
    inits = []
    for i, spec in enumerate(init):
        if isinstance(spec, tuple):
            inits.append(sidecar(spec[1], name=f"sidecar-con{i}"))
        else:
            inits.append(container(spec, name=f"init-con{i}"))  # type: ignore[arg-type]
    regulars = [container(r, name=f"con{i}") for i, r in enumerate(regular)]
    return make_pod("my-pod", uid="1234", requests=regulars, init=inits)


def classes(**by_resource: str) -> dict[str, DeviceClass]:
    return {r: DeviceClass(metadata=ObjectMeta(name=c)) for r, c in by_resource.items()}


POD1 = pod([{EXT: "1", EXT1: "2"}])
POD2 = pod([{EXT: "1"}, {EXT1: "2"}])
POD_INIT = pod([{EXT: "1"}], [{INIT: "2"}])
POD_INIT2 = pod([{EXT: "1"}], [{INIT: "1"}, {INIT: "2"}])
POD_INIT3 = pod([{EXT: "1"}], [{INIT: "1"}, ("sidecar", {INIT: "1"}), {INIT: "2"}])
POD1_INIT_IMPLICIT = pod([], [{INIT: "1", IMPLICIT_INIT: "2"}])
POD_INIT_IMPLICIT = pod([{EXT: "1"}], [{INIT: "1"}, {IMPLICIT_INIT: "2"}])

RES = {EXT: 1}
RES2 = {EXT: 1, EXT1: 2}
RES_INIT = {EXT: 1, INIT: 2}
RES_INIT_IMPLICIT = {EXT: 1, INIT: 2, IMPLICIT_INIT: 2}
DEV_MAP = classes(**{EXT: "class"})
DEV_MAP2 = classes(**{EXT: "class", EXT1: "class1"})
DEV_MAP_INIT = classes(**{EXT: "class", INIT: "classInit", IMPLICIT_INIT: "classInit"})


@pytest.mark.parametrize(
    ("pod_", "by_dra", "mapping", "want"),
    [
        pytest.param(POD1, {}, {}, [], id="nil"),
        pytest.param(
            POD1, RES, DEV_MAP, [("container-0-request-0", "class", 1)], id="one resource match"
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP,
            [("container-0-request-0", "class", 1)],
            id="one resource match, one resource not match",
        ),
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
            id="two resources match",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
            id="two containers match",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
            id="one init container, one regular container",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
            id="two init containers, one regular container",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                ("container-1-request-0", "classInit", 1),
                ("container-2-request-0", "classInit", 2),
                ("container-3-request-0", "class", 1),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
    ],
)
def test_requests(pod_: Pod, by_dra, mapping, want) -> None:
    requests, _ = requests_and_mappings(pod_, by_dra, mapping)
    got = []
    for r in requests:
        assert r.exactly is not None
        assert r.exactly.allocation_mode == "ExactCount"
        got.append((r.name, r.exactly.device_class_name, r.exactly.count))
    assert got == want  # sorted by name, as upstream returns them


def m(container_name: str, resource: str, request: str) -> ContainerExtendedResourceRequest:
    return ContainerExtendedResourceRequest(
        container_name=container_name, resource_name=resource, request_name=request
    )


@pytest.mark.parametrize(
    ("pod_", "by_dra", "mapping", "want"),
    [
        pytest.param(
            POD1,
            RES2,
            DEV_MAP2,
            [m("con0", EXT, "container-0-request-0"), m("con0", EXT1, "container-0-request-1")],
            id="one container, two requests",
        ),
        pytest.param(
            POD1_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                m("init-con0", IMPLICIT_INIT, "container-0-request-0"),
                m("init-con0", INIT, "container-0-request-1"),
            ],
            id="one container, one explicit and one implicit request",
        ),
        pytest.param(
            POD2,
            RES2,
            DEV_MAP2,
            [m("con0", EXT, "container-0-request-0"), m("con1", EXT1, "container-1-request-0")],
            id="two containers, two requests",
        ),
        pytest.param(
            POD_INIT,
            RES_INIT,
            DEV_MAP_INIT,
            [
                m("init-con0", INIT, "container-0-request-0"),
                m("con0", EXT, "container-1-request-0"),
            ],
            id="one init container, one regular container, one request",
        ),
        pytest.param(
            POD_INIT2,
            RES_INIT,
            DEV_MAP_INIT,
            [
                m("init-con0", INIT, "container-1-request-0"),
                m("init-con1", INIT, "container-1-request-0"),
                m("con0", EXT, "container-2-request-0"),
            ],
            id="three containers (two are init container), two requests",
        ),
        pytest.param(
            POD_INIT_IMPLICIT,
            RES_INIT_IMPLICIT,
            DEV_MAP_INIT,
            [
                m("init-con0", INIT, "container-0-request-0"),
                m("init-con1", IMPLICIT_INIT, "container-1-request-0"),
                m("con0", EXT, "container-2-request-0"),
            ],
            id="three containers (two are init container), both explicit and implicit resources",
        ),
        pytest.param(
            POD_INIT3,
            RES_INIT,
            DEV_MAP_INIT,
            [
                m("init-con0", INIT, "container-1-request-0"),
                m("sidecar-con1", INIT, "container-1-request-0"),
                m("init-con2", INIT, "container-2-request-0"),
                m("con0", EXT, "container-3-request-0"),
            ],
            id="four containers (two are init container, one sidecar), three requests",
        ),
    ],
)
def test_mappings(pod_: Pod, by_dra, mapping, want) -> None:
    _, mappings = requests_and_mappings(pod_, by_dra, mapping)
    # Upstream compares them ordered by request name, then container name.
    got = sorted(mappings, key=lambda x: (x.request_name, x.container_name))
    assert got == want
