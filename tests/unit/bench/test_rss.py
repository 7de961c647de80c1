"""``ksched bench --mode services`` reports each service's peak RSS from /proc."""

from __future__ import annotations

import os
import sys

import pytest

from bench.services import peak_rss_mb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_peak_rss_is_read_from_proc_in_mb() -> None:
    with open(f"/proc/{os.getpid()}/status") as status:
        [line] = [line for line in status if line.startswith("VmHWM:")]
    assert peak_rss_mb(os.getpid()) == round(int(line.split()[1]) / 1024, 1)
    assert peak_rss_mb(os.getpid()) > 1  # type: ignore[operator]


def test_a_process_that_is_gone_has_no_peak() -> None:
    assert peak_rss_mb(2**22 + 1) is None  # above Linux's largest pid
