"""The last line ``ksched bench`` prints: one JSON object of the run's figures."""

from __future__ import annotations

import resource
from collections.abc import Sequence


def summary(
    workload: str,
    mode: str,
    counts: tuple[int, int, int],
    latencies_ms: list[float],
    elapsed: float,
) -> dict[str, object]:
    """The final JSON line; ``counts`` is (nodes, init pods, measured pods done).
    ``messages_per_pod`` is None here (the cycle and embedded modes have no broker);
    bench.services sets it."""
    nodes, init, done = counts
    latencies_ms = sorted(latencies_ms)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "workload": workload,
        "mode": mode,
        "nodes": nodes,
        "init_pods": init,
        "pods": done,
        "pods_per_second": round(done / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(latencies_ms, 0.50), 3 if mode == "cycle" else 1),
        "p99_ms": round(percentile(latencies_ms, 0.99), 3 if mode == "cycle" else 1),
        "max_rss_mb": round(max(own, children) / 1024, 1),
        "messages_per_pod": None,
        "revision": revision(),
    }


def revision() -> str:
    """The git revision of the tree the bench ran (``unknown`` outside a checkout),
    with ``-dirty`` when it has uncommitted changes."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values``, sorted ascending (0.0 when there are none)."""
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]
