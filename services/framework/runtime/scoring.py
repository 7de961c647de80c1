"""PreScore, Score, NormalizeScore and host selection (``prioritizeNodes``, ``selectHost``)."""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import numpy as np

from services.framework.api.interface import (
    CycleState,
    PreScorePlugin,
    Rows,
    ScoreExtensions,
    ScorePlugin,
)
from services.framework.api.status import StatusError, as_status
from services.framework.api.types import MAX_NODE_SCORE, MIN_NODE_SCORE, Int64Array, PodInfo
from services.framework.cache.snapshot import Snapshot
from services.framework.runtime.results import message, results_of


def run_pre_score_plugins(
    plugins: Sequence[PreScorePlugin],
    state: CycleState,
    pod: PodInfo,
    nodes: Snapshot,
    rows: Rows,
    timer: Callable[[str, str, str, float, int], None] | None = None,
) -> None:
    """``RunPreScorePlugins``: Skip excludes the plugin's Score; other failures raise.
    ``timer``: told each plugin's status and duration."""
    recorded = results_of(state)
    for plugin in plugins:
        began = time.perf_counter() if timer is not None else 0.0
        try:
            status = plugin.pre_score(state, pod, nodes, rows)
        except Exception as err:
            status = as_status(err)
        if timer is not None:
            timer(plugin.name, "PreScore", status.code.name, time.perf_counter() - began, 1)
        if recorded is not None:
            recorded.pre_score[plugin.name] = message(status)
        if status.is_skip():
            state.skip_score_plugins.add(plugin.name)
        elif not status.is_success():
            raise StatusError(f'running PreScore plugin "{plugin.name}": {status.message()}')


def run_score_plugins(
    plugins: Sequence[ScorePlugin],
    weights: Mapping[str, int],
    state: CycleState,
    pod: PodInfo,
    nodes: Snapshot,
    rows: Rows,
    breakdown: dict[str, Int64Array] | None = None,
    timer: Callable[[str, str, str, float, int], None] | None = None,
) -> Int64Array:
    """``RunScorePlugins``: the weighted total per row. ``breakdown`` (if given) receives
    each plugin's normalized, unweighted scores for ``--explain``; ``timer`` each
    plugin's duration and the nodes it scored."""
    total = np.zeros(len(rows), dtype=np.int64)
    recorded = results_of(state)
    for plugin in plugins:
        if plugin.name in state.skip_score_plugins:
            continue
        try:
            began = time.perf_counter() if timer is not None else 0.0
            scores = np.asarray(plugin.score_all(state, pod, nodes, rows), dtype=np.int64)
            if timer is not None:
                timer(plugin.name, "Score", "Success", time.perf_counter() - began, len(rows))
            if recorded is not None:  # before NormalizeScore, as the simulator records it
                recorded.scored(plugin.name, nodes.names, rows.tolist(), scores)
            if _normalizes(type(plugin)):
                normalize = cast(ScoreExtensions, plugin).normalize_score
                scores = np.asarray(normalize(state, pod, scores), np.int64)
        except Exception as err:
            raise StatusError(
                f'running Score plugin "{plugin.name}": {as_status(err).message()}'
            ) from err
        # Two reductions; the elementwise test only to name the first bad score.
        if scores.size and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
            bad = (scores > MAX_NODE_SCORE) | (scores < MIN_NODE_SCORE)
            value = int(scores[np.argmax(bad)])
            raise StatusError(
                f'plugin "{plugin.name}" returns an invalid score {value}, it should in the '
                f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
            )
        if breakdown is not None:
            breakdown[plugin.name] = scores
        total += scores * weights[plugin.name]
    return total


def select_host(rows: Rows, totals: Int64Array, rng: random.Random) -> int:
    """The row with the highest total; ties are broken uniformly at random with ``rng``
    (upstream samples the tied nodes with a reservoir: same distribution)."""
    best = np.flatnonzero(totals == totals.max())
    pick = best[0] if len(best) == 1 else best[rng.randrange(len(best))]
    return int(rows[pick])


@functools.cache
def _normalizes(cls: type) -> bool:
    """Whether a Score plugin's class has NormalizeScore: checked once per class (a
    runtime Protocol check per pod and plugin costs more than the scoring itself)."""
    return issubclass(cls, ScoreExtensions)
