"""ImageLocality: favour nodes that already have the pod's container images.

Score only. Each image of the pod's init and app containers that the node reports in
``status.images`` (the pod's name normalized with ``:latest`` when it has no tag, the
node's names taken as reported) adds its size scaled by the fraction of all nodes that
have it (``size * numNodes / totalNodes``, in float64 then truncated, as upstream), to
damp the "node heating" of rare images. The sum is clamped to
``[23 MiB, 1000 MiB * containers]`` and mapped linearly onto ``[0, 100]`` in integer
arithmetic. Default weight 1.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from contracts.k8s import Pod
from services.framework.api.interface import CycleState, Handle, Rows, ScorePlugin
from services.framework.api.registry import PluginEntry
from services.framework.api.types import MAX_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.attributes import ImageIndex
from services.framework.cache.snapshot import Snapshot
from services.framework.plugins.helper.intdiv import go_div

NAME: Final = "ImageLocality"
MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
"""Below this total (scaled) size a node scores 0: images that small pull fast."""
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB
"""Per container: a total at or above ``this * containers`` scores 100."""


def normalized_image_name(name: str) -> str:
    """``normalizedImageName``: append ``:latest`` when the name has no tag (no ``:``
    after the last ``/``). Registries are not canonicalized, as upstream."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_images(pod: Pod) -> tuple[str, ...]:
    """The normalized images of the init containers, then the app containers."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    return tuple(normalized_image_name(c.image or "") for c in containers)


def sum_image_scores(images: tuple[str, ...], index: ImageIndex, num_nodes: int) -> Int64Array:
    """``sumImageScores`` for every node at once."""
    total = np.zeros(num_nodes, dtype=np.int64)
    for image in images:
        found = index.by_name.get(image)
        if found is None:
            continue
        rows, sizes = found
        spread = float(len(rows)) / float(num_nodes)
        total[rows] += (sizes.astype(np.float64) * spread).astype(np.int64)
    return total


def calculate_priority(sum_scores: Int64Array, num_containers: int) -> Int64Array:
    """``calculatePriority``: clamp, then scale onto ``[0, MaxNodeScore]``."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if max_threshold <= MIN_THRESHOLD:  # no containers: every sum clamps to the minimum
        return np.zeros(len(sum_scores), dtype=np.int64)
    clamped = np.clip(sum_scores, MIN_THRESHOLD, max_threshold)
    return go_div(MAX_NODE_SCORE * (clamped - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality(ScorePlugin):
    name: Final = NAME

    def score_all(self, state: CycleState, pod: PodInfo, nodes: Snapshot, rows: Rows) -> Int64Array:
        images = pod_images(pod.pod)
        if not images:
            return np.zeros(len(rows), dtype=np.int64)
        index = nodes.attributes.images()
        if not any(image in index.by_name for image in images):
            return np.zeros(len(rows), dtype=np.int64)
        sums = nodes.attributes.memo(
            (NAME, images), lambda: sum_image_scores(images, index, nodes.num_nodes)
        )
        return calculate_priority(sums[rows], len(images))


def new(args: None, handle: Handle) -> ImageLocality:
    return ImageLocality()


ENTRY: Final = PluginEntry(NAME, ImageLocality, new)
