"""ImageLocality, with upstream's image_locality_test.go fixtures; the expected scores
follow the current formula (threshold 1000 MiB per container, spread scaling)."""

from __future__ import annotations

import numpy as np
import pytest

from services.framework.plugins.imagelocality import (
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from tests.builders import container, make_node, make_pod
from tests.unit.framework.plugins.basic_plugins import scores

MB = 1024 * 1024
NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]


def pod_of(*images: str, init: tuple[str, ...] = ()):
    return make_pod(
        requests=[container(image=i) for i in images], init=[container(image=i) for i in init]
    )


@pytest.mark.parametrize(
    ("pod", "node_images", "expected"),
    [
        # m1: 40M/2 < 23M -> 0; m2: 100 * (250M/2 - 23M) / (1000M * 2 - 23M) = 5
        pytest.param(
            pod_of("gcr.io/40", "gcr.io/250"),
            [NODE_40_300_2000, NODE_250_10],
            [0, 5],
            id="two images spread on two nodes, prefer the larger image one",
        ),
        # m1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
        pytest.param(
            pod_of("gcr.io/40", "gcr.io/300"),
            [NODE_40_300_2000, NODE_250_10],
            [7, 0],
            id="two images on one node, prefer this node",
        ),
        # m1: 100 * (2000M/2 - 23M) / (2000M - 23M) = 49; m2: 10M/2 < 23M
        pytest.param(
            pod_of("gcr.io/2000", "gcr.io/10"),
            [NODE_40_300_2000, NODE_250_10],
            [49, 0],
            id="if exceed limit, use limit",
        ),
        # m1: 100 * (2000M/3 - 23M) / (2000M - 23M) = 32
        pytest.param(
            pod_of("gcr.io/2000", "gcr.io/10"),
            [NODE_40_300_2000, NODE_250_10, []],
            [32, 0, 0],
            id="with a node which has no images",
        ),
        pytest.param(
            pod_of("gcr.io/2000"),
            [NODE_40_300_2000, NODE_250_10],
            [100, 0],
            id="one container: the threshold is 1000M",
        ),
        pytest.param(
            pod_of("gcr.io/300", init=("gcr.io/250",)),
            [NODE_40_300_2000, NODE_250_10],
            [6, 5],
            id="init containers count, image and threshold",
        ),
        # 100 * (300M * 2/3 - 23M) / (1000M - 23M) = 18
        pytest.param(
            pod_of("gcr.io/300:v1"),
            [NODE_40_300_2000, NODE_250_10, NODE_40_300_2000],
            [18, 0, 18],
            id="tagged name, on two nodes of three",
        ),
        pytest.param(
            pod_of("docker.io/library/gcr.io/300"),
            [NODE_40_300_2000],
            [0],
            id="registries are not canonicalized",
        ),
        pytest.param(make_pod(), [NODE_40_300_2000], [0], id="no containers"),
    ],
)
def test_score(pod, node_images, expected):
    nodes = [make_node(f"m{i}", images=imgs) for i, imgs in enumerate(node_images)]
    assert scores(ImageLocality(), pod, nodes) == expected


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("gcr.io/40", "gcr.io/40:latest"),
        ("gcr.io/40:v1", "gcr.io/40:v1"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("localhost:5000/app:1", "localhost:5000/app:1"),
        ("nginx", "nginx:latest"),
        ("", ":latest"),
    ],
)
def test_normalized_image_name(name, normalized):
    assert normalized_image_name(name) == normalized


def test_priority_bounds():
    sums = [0, 23 * MB, 24 * MB, 1000 * MB, 5000 * MB]
    got = calculate_priority(np.asarray(sums, dtype=np.int64), 1).tolist()
    assert got == [0, 0, 0, 100, 100]
