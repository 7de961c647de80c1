"""``--no-scheduled-events`` (BinderSettings.scheduled_events): the binder publishes the
Binding without the ``Scheduled`` Event; by default both go out, as kube-scheduler
records the Event (in-memory bus, store and event log)."""

from __future__ import annotations

import pytest

from contracts import topology
from services.cli.main import _settings, _settings_argv, parser
from services.common.settings import from_env
from tests.builders import make_pod
from tests.unit.binder.support import added, assume_on, bind_batch, informer_and_binder
from tests.unit.framework.plugins.volumes.helpers import host


async def _decisions_of_one_binding(scheduled_events: bool | None) -> list[str]:
    """The routing keys the binder publishes on ksched.decisions binding one pod."""
    settings = from_env({}, scheduled_events=scheduled_events)
    async with informer_and_binder(settings) as (bus, store):
        pod = make_pod("web")
        await bus.publish([added("node", host("n1")), added("pod", pod)])
        await bus.wait_idle()
        await assume_on(store, [pod], "n1")
        bus.batches.clear()
        await bus.publish([bind_batch([pod], "n1")])
        await bus.wait_idle()
    return [m.routing_key for m in bus.published if m.exchange == topology.DECISIONS.name]


@pytest.mark.parametrize(
    ("flag", "keys"),
    [
        (None, ["binding.default", "event.default"]),
        (True, ["binding.default", "event.default"]),
        (False, ["binding.default"]),
    ],
    ids=["default", "on", "off"],
)
async def test_the_scheduled_event_goes_out_unless_turned_off(
    flag: bool | None, keys: list[str]
) -> None:
    assert await _decisions_of_one_binding(flag) == keys


def test_the_flag_reaches_the_binder_settings_and_up_forwards_it() -> None:
    assert _settings(parser().parse_args(["run", "binder"])).binder.scheduled_events is True
    off = parser().parse_args(["run", "binder", "--no-scheduled-events"])
    assert _settings(off).binder.scheduled_events is False
    up = parser().parse_args(["up", "--no-scheduled-events"])
    assert "--no-scheduled-events" in _settings_argv(up)  # every child takes it
    assert "--no-scheduled-events" not in _settings_argv(parser().parse_args(["up"]))
    bench = parser().parse_args(["bench", "SchedulingBasic", "--no-scheduled-events"])
    assert bench.scheduled_events is False
