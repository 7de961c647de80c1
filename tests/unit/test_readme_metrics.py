"""The README's list of ksched's own metrics ("ksched's own, in every service: …") names
every ``ksched_*`` series the services register, and nothing else: a metric added
without a line in the README fails here."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from services.common.bus.memory import MemoryBus
from services.common.clock import FakeClock
from services.common.eventlog.memory import MemoryEventLog
from services.common.observe import EdgeMetrics
from services.common.store.memory import MemoryStore
from services.descheduler.metrics import DeschedulerMetrics
from services.informer.service import InformerService
from services.queue.metrics import registry_for
from services.scheduler.metrics import SchedulerMetrics
from tests.unit.queue.helpers import make_queue

README = Path(__file__).resolve().parents[2] / "README.md"


def listed() -> set[str]:
    """The ``ksched_*`` names of the README's paragraph on ksched's own metrics."""
    paragraph = re.search(
        r"^ksched's own, in every service:.*?(?=\n\n)", README.read_text(), re.S | re.M
    )
    assert paragraph is not None, "README.md lost its paragraph on ksched's own metrics"
    return set(re.findall(r"`(ksched_[a-z_]+)", paragraph.group(0)))


def exposed(registry: CollectorRegistry) -> set[str]:
    """The ``ksched_*`` series names ``registry`` serves (a counter with ``_total``)."""
    names = set()
    for family in registry.collect():
        if family.name.startswith("ksched_"):
            names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_the_readme_lists_every_ksched_metric_the_services_register() -> None:
    queue, _ = make_queue()
    informer = InformerService(MemoryBus(), MemoryStore(), MemoryEventLog(), FakeClock())
    registries = [
        EdgeMetrics().registry,
        SchedulerMetrics().registry,
        registry_for(queue),
        informer.registry,
        DeschedulerMetrics().registry,
    ]
    registered = set().union(*(exposed(r) for r in registries))
    assert "ksched_store_domain_conflicts_total" in registered
    assert listed() == registered
