"""What ``ksched bench --mode services`` reads of its processes (bench.scrape) and makes of
it (bench.services): the counters summed over label sets, the readiness wait, the wait
for quiet counters (on a fake fetch and sleep: no time passes), the broker figures, the
scheduler replicas and the ``--replicas`` flag's errors."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest

from bench.scrape import (
    ASSUME_CONFLICTS,
    CONSUMED,
    CYCLE_CPU,
    DOMAIN_CONFLICTS,
    PUBLISHED,
    BenchFailure,
    Counters,
    Endpoints,
    free_ports,
    totals,
)
from bench.services import broker_figures, processes
from services.cli.main import main


def exposition(**series: dict[str, float]) -> str:
    """Prometheus text: for each counter name (without ``_total``), one sample per
    label value (label ``exchange``)."""
    lines = []
    for name, samples in series.items():
        lines += [f"# HELP {name} x", f"# TYPE {name} counter"]
        for label, value in samples.items():
            lines.append(f'{name}_total{{exchange="{label}"}} {value}')
            lines.append(f'{name}_created{{exchange="{label}"}} 1.7e9')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            exposition(ksched_messages_published={"ksched.events": 3, "ksched.decisions": 4}),
            {PUBLISHED: 7.0, CONSUMED: 0.0, ASSUME_CONFLICTS: 0.0, DOMAIN_CONFLICTS: 0.0,
             CYCLE_CPU: 0.0},
            id="summed-over-labels",
        ),
        pytest.param(
            exposition(
                ksched_store_assume_conflicts={"": 2},
                ksched_store_domain_conflicts={"": 5},
                ksched_messages_consumed={"q": 9},
                ksched_scheduling_cycle_cpu_seconds={"": 0.25},
            ),
            {PUBLISHED: 0.0, CONSUMED: 9.0, ASSUME_CONFLICTS: 2.0, DOMAIN_CONFLICTS: 5.0,
             CYCLE_CPU: 0.25},
            id="conflicts-and-consumed",
        ),
        pytest.param(
            "",
            {PUBLISHED: 0.0, CONSUMED: 0.0, ASSUME_CONFLICTS: 0.0, DOMAIN_CONFLICTS: 0.0,
             CYCLE_CPU: 0.0},
            id="absent-series-read-0",
        ),
    ],
)  # fmt: skip
def test_counters_are_summed_over_their_label_sets(text: str, expected: dict[str, float]) -> None:
    assert totals(text) == expected


class FakeServers:
    """Answers GETs from a script: per port, the successive (status, body) answers (the
    last repeats), or OSError for a port that refuses; counts the sleeps."""

    def __init__(self, answers: dict[int, list[tuple[int, str] | None]]) -> None:
        self.answers = {port: iter(script) for port, script in answers.items()}
        self.last: dict[int, tuple[int, str] | None] = {}
        self.slept: list[float] = []

    async def fetch(self, port: int, path: str) -> tuple[int, str]:
        answer = next(self.answers[port], self.last.get(port))
        self.last[port] = answer
        if answer is None:
            raise ConnectionRefusedError(port, "refused")
        return answer

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def endpoints(servers: FakeServers, ports: dict[str, int]) -> Endpoints:
    return Endpoints(ports, fetch=servers.fetch, sleep=servers.sleep, poll=0.1)


async def test_ready_waits_for_every_process_to_answer_200() -> None:
    servers = FakeServers({1: [None, (503, ""), (200, "")], 2: [(200, "")]})
    waiting = endpoints(servers, {"informer": 1, "queue": 2})
    await waiting.ready(lambda name: None, within=10)
    assert waiting.polls["ready"] == 3 and servers.slept == [0.1, 0.1]


@pytest.mark.parametrize(
    ("exited", "within", "message"),
    [
        ({"scheduler": 1}, 10.0, "the scheduler process exited with 1 before it was ready"),
        ({}, 0.3, "not ready after 0.3 s: scheduler (GET /readyz on port 7)"),
    ],
)
async def test_a_process_that_exits_or_never_gets_ready_fails_the_run(
    exited: dict[str, int], within: float, message: str
) -> None:
    servers = FakeServers({7: [(503, "")]})
    waiting = endpoints(servers, {"scheduler": 7})
    with pytest.raises(BenchFailure, match=re.escape(message)):
        await waiting.ready(exited.get, within=within)


def published(n: float) -> tuple[int, str]:
    return 200, exposition(ksched_messages_published={"ksched.events": n})


async def test_settled_waits_until_the_published_counters_stop_moving() -> None:
    servers = FakeServers({1: [published(1), published(5), published(9)], 2: [None]})
    waiting = endpoints(servers, {"binder": 1, "starting": 2})
    counters = await waiting.settled(quiet_polls=2)
    assert counters["binder"][PUBLISHED] == 9 and counters["starting"][PUBLISHED] == 0
    assert waiting.polls["settled"] == 4  # 5, 9, 9, 9: two quiet polls in a row


async def test_counters_still_moving_are_taken_as_they_are_at_the_bound() -> None:
    servers = FakeServers({1: [published(n) for n in range(100)]})
    waiting = endpoints(servers, {"binder": 1})
    counters = await waiting.settled(quiet_polls=2, within=0.5)
    assert counters["binder"][PUBLISHED] == 5 and len(servers.slept) == 5


def counters(**published_by_process: float) -> Counters:
    return {name: {PUBLISHED: n, CONSUMED: 2 * n} for name, n in published_by_process.items()}


@pytest.mark.parametrize(
    ("before", "after", "client", "pods", "expected"),
    [
        pytest.param(
            counters(informer=10, binder=100),
            counters(informer=12, binder=300),
            100,
            100,
            {
                "messages_published": 302,
                "messages_per_pod": 3.02,
                "messages_by_process": {"informer": 2, "binder": 200, "bench": 100},
                "deliveries_per_pod": 4.04,
            },
            id="growth-plus-client",
        ),
        pytest.param(
            {},
            counters(passthrough=50),
            50,
            50,
            {
                "messages_published": 100,
                "messages_per_pod": 2.0,
                "messages_by_process": {"passthrough": 50, "bench": 50},
                "deliveries_per_pod": 2.0,
            },
            id="not-serving-before",
        ),
        pytest.param(
            counters(binder=1),
            counters(binder=1),
            0,
            0,
            {
                "messages_published": 0,
                "messages_per_pod": None,
                "messages_by_process": {"binder": 0, "bench": 0},
                "deliveries_per_pod": None,
            },
            id="no-pods",
        ),
    ],
)
def test_broker_figures(
    before: Counters, after: Counters, client: int, pods: int, expected: dict[str, object]
) -> None:
    assert broker_figures(before, after, client, pods) == expected


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        (1, [("scheduler", ["scheduler", "--replica", "sched-0"])]),
        (
            2,
            [
                ("scheduler-sched-0", ["scheduler", "--replica", "sched-0"]),
                ("scheduler-sched-1", ["scheduler", "--replica", "sched-1"]),
            ],
        ),
    ],
)
def test_each_scheduler_replica_is_a_process_of_its_own(
    replicas: int, expected: list[tuple[str, list[str]]]
) -> None:
    plan = processes(replicas)
    assert [p for p in plan if p[1][0] == "scheduler"] == expected
    assert [name for name, _ in plan if not name.startswith("scheduler")] == [
        "informer",
        "queue",
        "binder",
    ]


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5

    def bound() -> Iterator[socket.socket]:
        for port in ports:
            s = socket.socket()
            s.bind(("127.0.0.1", port))
            yield s

    for s in list(bound()):
        s.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replicas", "0", "--mode", "services"],
         "--replicas: '0': a whole number of scheduler processes, 1 or more"),
        (["--replicas", "two", "--mode", "services"],
         "--replicas: 'two': a whole number of scheduler processes, 1 or more"),
        (["--replicas", "2", "--mode", "embedded"],
         "--replicas: only with --mode services (Passthrough has no scheduler)"),
    ],
)  # fmt: skip
def test_a_wrong_replicas_flag_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "SchedulingBasic", *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"ksched bench: {message}"]


def test_passthrough_takes_no_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "Passthrough", "--replicas", "2", "--mode", "services"]) == 2
    assert "--replicas: only with --mode services" in capsys.readouterr().err


def test_an_unknown_workload_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "SchedulingNothing", "--mode", "cycle"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ksched bench: ") and "'SchedulingNothing'" in line
