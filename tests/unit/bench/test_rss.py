"""``ksched bench --mode services`` reports each service's peak RSS from /proc."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.services import peak_rss_mb

HOLD_THEN_FREE = (
    "import sys\n"
    "held = b'x' * (100 << 20)\n"  # written, so resident
    "del held\n"  # one mmap'd block: freeing it gives the pages back
    "print('freed', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_peak_rss_is_the_high_water_mark_in_mb() -> None:
    """A process that held 100 MB and let them go: its peak still counts them, in MB
    (``VmHWM``, kB in /proc), while its current RSS no longer does."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_THEN_FREE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:  # leaving closes its stdin: it ends
        assert child.stdout is not None
        assert child.stdout.readline() == "freed\n"
        with open(f"/proc/{child.pid}/status") as status:
            [line] = [line for line in status if line.startswith("VmHWM:")]
        peak, current = peak_rss_mb(child.pid), peak_rss_mb(child.pid, "VmRSS")
    assert peak == round(int(line.split()[1]) / 1024, 1)
    assert peak is not None and current is not None
    assert peak >= 100 > current


def test_a_process_that_is_gone_has_no_peak() -> None:
    assert peak_rss_mb(2**22 + 1) is None  # above Linux's largest pid
