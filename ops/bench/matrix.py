"""The issue-14 matrix: every scheduler_perf workload in services mode, one after
another, written as one Markdown table next to upstream's floors.

    .venv/bin/python ops/bench/matrix.py [--out FILE] [--scale F] [--only NAMES]

``--scale 0.05`` is a quick check; the README's table is measured at ``--scale 1`` on an
idle machine. What runs and where the floors come from: bench/matrix.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.matrix import main

if __name__ == "__main__":
    sys.exit(main())
