"""The worked example the CLI tests share: ops/examples/cluster.yaml and what
``ksched simulate`` decides for it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "ops" / "examples" / "cluster.yaml"

# Worked by hand with NodeResourcesFit (LeastAllocated, cpu and memory weight 1):
# critical (priority 1000) is attempted first; 3 CPU fit only on medium (small has 2,
# large 8 - 6 = 2, tiny is at its pod limit). batch-1 then scores small 62 ((50+75)/2),
# large 40 ((12+68)/2), medium 31 ((0+62)/2). batch-2: small and medium have no CPU
# left, so large. trainer needs the GPU only large has. giant needs 16 CPU: every node
# lacks CPU, and tiny is also at its one-pod limit.
EXPECTED_BINDINGS = {
    "demo/critical": "medium",
    "demo/batch-1": "small",
    "demo/batch-2": "large",
    "demo/trainer": "large",
}
EXPECTED_FAILURE = (
    "0/4 nodes are available: 1 Too many pods, 4 Insufficient cpu. no new claims to deallocate,"
    " preemption: 0/4 nodes "
    "are available: 4 No preemption victims found for incoming pod."
)
