"""Building services from settings: configuration reaches them, bad configuration stops them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from services.cli.runtime import build, edges
from services.common.settings import from_env
from services.informer.service import InformerService
from services.informer.snapshots import SnapshotPolicy
from services.queue.service import QueueService

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
profiles:
- schedulerName: default-scheduler
- schedulerName: batch
"""


def test_the_queue_takes_profiles_and_backoff_from_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    settings = from_env({}, amqp_url="memory://", redis_url="memory://", config=str(path))
    bus, store = edges(settings)
    queue = build("queue", settings, bus, store)
    assert isinstance(queue, QueueService)
    assert (queue.queue.initial_backoff, queue.queue.max_backoff) == (2.0, 30.0)
    assert queue.serves == frozenset({"default-scheduler", "batch"})


def test_the_informer_takes_its_snapshot_settings() -> None:
    env = {"KSCHED_SNAPSHOT_EVERY": "7", "KSCHED_SNAPSHOT_INTERVAL": "30"}
    settings = from_env(
        {**env, "KSCHED_LOG_RETENTION": "5"},
        amqp_url="memory://",
        redis_url="memory://",
        event_log="memory://",
    )
    informer = build("informer", settings, *edges(settings))
    assert isinstance(informer, InformerService) and informer.snapshots is not None
    assert informer.snapshots.policy == SnapshotPolicy(every=7, interval=30.0, retention=5)


def test_a_bad_configuration_stops_the_service_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.replace("podMaxBackoffSeconds: 30", "podMaxBackoffSeconds: 1"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.cli.main",
            "run",
            "scheduler",
            "--config",
            str(path),
            "--amqp-url",
            "memory://",
            "--redis-url",
            "memory://",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "podMaxBackoffSeconds" in done.stderr and "Traceback" not in done.stderr
