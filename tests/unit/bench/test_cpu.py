"""The CPU accounting of ``ksched bench`` (bench.cpu) on injected readings: ``/proc``
stat parsing, the idle baseline scaled and subtracted, clamping, the ratio to the cycle,
the projected ceiling, and finding the broker's and Redis's processes in a fake
``/proc``. No time passes."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from bench import cpu
from bench.cpu import Probe, Sample

# A stat line whose command name holds a space and a parenthesis: fields count after the
# last ")". utime 250, stime 50 (clock ticks).
STAT = (
    "4242 (beam (smp)) S 1 4242 4242 0 -1 4194560 123 0 0 0 250 50 0 0 20 0 30 0 "
    "1000 2000000 3000 18446744073709551615 1 1 0 0 0 0 0 4096 17 0 0 0 0 0 0"
)


def test_the_stat_line_gives_user_plus_system_time() -> None:
    assert cpu.stat_cpu_seconds(STAT, 100) == 3.0
    assert cpu.stat_cpu_seconds(STAT, 250) == 1.2


def test_the_proc_reader_reads_a_stat_file_and_none_once_it_is_gone(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text(STAT)
    read = cpu.proc_reader(7, tmp_path)
    assert read() == 300 / os.sysconf("SC_CLK_TCK")
    (tmp_path / "7" / "stat").unlink()
    assert read() is None


def sample(at: float, **cpu_seconds: float | None) -> Sample:
    return Sample(at, dict(cpu_seconds))


def test_the_idle_rate_is_scaled_to_the_measured_window_and_subtracted() -> None:
    # Idle: 0.1 s of CPU over 1 s; measured: 2.0 s of CPU over 4 s, of which 0.4 s idle.
    baseline = (sample(10.0, scheduler=5.0), sample(11.0, scheduler=5.1))
    measured = (sample(11.0, scheduler=5.1), sample(15.0, scheduler=7.1))
    per_pod, missing = cpu.per_pod_ms(baseline, measured, 400)
    assert per_pod == {"scheduler": pytest.approx((2.0 - 0.4) * 1000 / 400)}
    assert missing == {}


def test_a_process_busier_idle_than_measured_counts_0_not_less() -> None:
    baseline = (sample(0.0, redis=1.0), sample(1.0, redis=1.5))
    measured = (sample(1.0, redis=1.5), sample(3.0, redis=1.6))  # 0.1 s used, 1.0 s idle
    per_pod, _ = cpu.per_pod_ms(baseline, measured, 10)
    assert per_pod == {"redis": 0.0}


def test_a_zero_length_baseline_subtracts_nothing() -> None:
    baseline = (sample(1.0, queue=2.0), sample(1.0, queue=2.0))
    measured = (sample(1.0, queue=2.0), sample(2.0, queue=2.5))
    assert cpu.per_pod_ms(baseline, measured, 5)[0] == {"queue": pytest.approx(100.0)}


def test_a_process_not_read_once_is_missing_with_why() -> None:
    baseline = (sample(0.0, binder=1.0, bench=1.0), sample(1.0, binder=1.0, bench=1.0))
    measured = (sample(1.0, binder=1.0, bench=1.0), sample(2.0, binder=None, bench=1.2))
    per_pod, missing = cpu.per_pod_ms(baseline, measured, 100)
    assert per_pod == {"bench": pytest.approx(2.0)}
    assert set(missing) == {"binder"} and "could not be read" in missing["binder"]


@pytest.mark.parametrize(
    ("per_pod", "expected"),
    [
        pytest.param({"informer": 0.5, "queue": 0.25, "scheduler": 4.0}, 2000.0, id="informer"),
        pytest.param({"informer": 0.1, "queue": 0.4}, 2500.0, id="queue"),
        pytest.param({"queue": 0.0, "informer": 0.0}, None, id="no-cpu-used"),
        pytest.param({"scheduler": 1.0}, None, id="neither-measured"),
    ],
)
def test_the_projected_ceiling_is_the_busiest_single_instance_role(
    per_pod: dict[str, float], expected: float | None
) -> None:
    assert cpu.projected_ceiling(per_pod, cpu.SINGLE_INSTANCE) == expected


def test_the_figures_total_the_processes_and_set_them_against_the_cycle() -> None:
    per_pod = {"informer": 0.5, "queue": 0.25, "scheduler": 1.25, "bench": 2.0}
    out = cpu.figures(per_pod, {"rabbitmq": "elsewhere"}, 0.5, cpu.SINGLE_INSTANCE)
    assert out == {
        "cpu_ms_per_pod": per_pod,
        "cpu_ms_per_pod_total": 4.0,
        "cpu_absent": {"rabbitmq": "elsewhere"},
        "cycle_cpu_ms_per_pod": 0.5,
        "cpu_ratio_to_cycle": 8.0,
        "projected_ceiling_pods_per_s": 2000.0,
    }


@pytest.mark.parametrize(
    ("per_pod", "cycle"),
    [
        pytest.param({"informer": 0.65308, "queue": 0.07022, "scheduler": 1.52135}, 0.36548),
        pytest.param({"informer": 0.27765, "queue": 0.23357, "scheduler": 1.33779}, 0.2781),
        pytest.param({"informer": 0.57666, "queue": 0.13586, "scheduler": 1.67152}, 0.61924),
    ],
)
def test_the_ratio_and_the_ceiling_are_those_of_the_figures_shown(
    per_pod: dict[str, float], cycle: float
) -> None:
    """Unrounded, these give another ratio and ceiling in their last digit (6.1 against
    6.2, 1,531.2 against 1,531.4 pods/s, …): the report's must follow from its figures."""
    out = cpu.figures(per_pod, {}, cycle, cpu.SINGLE_INSTANCE)
    shown: dict[str, float] = out["cpu_ms_per_pod"]  # type: ignore[assignment]
    total, shown_cycle = out["cpu_ms_per_pod_total"], out["cycle_cpu_ms_per_pod"]
    assert out["cpu_ratio_to_cycle"] == round(total / shown_cycle, 1)  # type: ignore[operator]
    busiest = max(shown["informer"], shown["queue"])
    assert out["projected_ceiling_pods_per_s"] == round(1000 / busiest, 1)


def test_without_a_cycle_or_roles_only_the_processes_are_reported() -> None:
    assert cpu.figures({"passthrough": 0.1234567}, {}) == {
        "cpu_ms_per_pod": {"passthrough": 0.123},
        "cpu_ms_per_pod_total": 0.123,
    }
    assert cpu.figures({"embedded": 1.0}, {}, 0.0)["cpu_ratio_to_cycle"] is None


def test_the_table_shows_each_process_the_ratio_and_the_ceiling_beside_the_rate() -> None:
    report = {"pods_per_second": 300.0, **cpu.figures(
        {"informer": 0.5, "queue": 0.25}, {"redis": "in a container"}, 0.25, cpu.SINGLE_INSTANCE
    )}  # fmt: skip
    lines = cpu.table(report)
    assert lines[1].split() == ["informer", "0.500"]
    assert lines[3] == "  redis     absent: in a container"
    assert lines[4].split() == ["total", "0.750"]
    assert "whole pipeline / cycle: 3.0" in lines[5]
    assert lines[6].startswith("projected ceiling 2000.0 pods/s")
    assert lines[6].endswith("measured 300.0 pods/s")
    assert cpu.table({"pods": 3}) == []


async def test_the_baseline_is_two_samples_the_window_apart() -> None:
    now = [100.0]
    used = iter([1.0, 1.25])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    probe = Probe({"informer": lambda: next(used)}, clock=lambda: now[0])
    first, second = await probe.baseline(2.0, sleep)
    assert slept == [2.0]
    assert (first.at, first.cpu, second.at, second.cpu) == (
        100.0, {"informer": 1.0}, 102.0, {"informer": 1.25},
    )  # fmt: skip


# -- the broker's and Redis's processes in a fake /proc -------------------------------

TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1628 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 5001 1
   1: 0100007F:1628 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   999        0 5002 1
   2: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5003 1
"""
"""Port 0x1628 = 5672 listening (inode 5001) and one connection to it; 6379 (0x18EB)
listening (inode 5003)."""


def fake_proc(root: Path, processes: Mapping[int, tuple[str, str, list[int]]]) -> Path:
    """``root`` as ``/proc``: pid → (comm, command line, socket inodes it holds)."""
    (root / "net").mkdir(parents=True)
    (root / "net" / "tcp").write_text(TCP)
    for pid, (comm, cmdline, sockets) in processes.items():
        (root / str(pid) / "fd").mkdir(parents=True)
        (root / str(pid) / "comm").write_text(comm + "\n")
        (root / str(pid) / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())
        for number, inode in enumerate(sockets):
            (root / str(pid) / "fd" / str(number)).symlink_to(f"socket:[{inode}]")
    (root / "self").mkdir()
    return root


def test_the_listening_inodes_of_a_port() -> None:
    assert cpu.listening_inodes(TCP, 5672) == {5001}
    assert cpu.listening_inodes(TCP, 6379) == {5003}
    assert cpu.listening_inodes(TCP, 15672) == set()


def test_the_broker_is_the_beam_process_listening_on_the_url_s_port(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {
        10: ("beam.smp", "beam.smp -- -root /usr/lib/erlang -s rabbit boot", [5001]),
        11: ("beam.smp", "beam.smp -- -s rabbit boot -rabbit tcp_listeners 5673", []),
        12: ("python", "python bench", [5002]),
    })  # fmt: skip
    assert cpu.broker_pid("amqp://guest:guest@127.0.0.1:5672/", proc) == (10, "")
    assert cpu.broker_pid("amqp://localhost/,amqp://127.0.0.1:5673/", proc) == (10, "")


def test_a_proxy_on_the_port_is_not_the_broker(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {20: ("python3", "python3 broker_proxy.py", [5001])})
    pid, why = cpu.broker_pid("amqp://127.0.0.1:5672/", proc)
    assert pid is None and why == "port 5672 is served by python3 (pid 20), not a RabbitMQ node"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("amqp://rabbit.example:5672/", "the broker is on rabbit.example, not this host"),
        ("amqp://127.0.0.1:5999/", "nothing listens on port 5999 here"),
    ],
)
def test_a_broker_elsewhere_is_absent_with_why(tmp_path: Path, url: str, says: str) -> None:
    proc = fake_proc(tmp_path, {10: ("beam.smp", "beam.smp -s rabbit", [5001])})
    pid, why = cpu.broker_pid(url, proc)
    assert pid is None and why.startswith(says)


async def test_redis_is_info_s_process_id_when_it_is_a_redis_server_here(
    tmp_path: Path,
) -> None:
    proc = fake_proc(tmp_path, {30: ("redis-server", "redis-server 127.0.0.1:6379", [5003])})

    async def info(pid: int) -> Mapping[str, object]:
        return {"redis_version": "7.0.15", "process_id": pid}

    assert await cpu.redis_pid(lambda: info(30), proc) == (30, "")
    pid, why = await cpu.redis_pid(lambda: info(1), proc)
    assert pid is None and why.startswith("INFO gives process_id 1, not a redis-server")

    async def refused() -> Mapping[str, object]:
        raise ConnectionRefusedError("refused")

    pid, why = await cpu.redis_pid(refused, proc)
    assert pid is None and why == "INFO server gave no process_id (refused)"
