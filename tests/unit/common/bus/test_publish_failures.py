"""Which failed publishes the RabbitMQ bus calls refused (the message's fault: a handler
that raised it is dead-lettered) and which unavailable (retried): table-driven over the
failures aiormq reports."""

from __future__ import annotations

import aiormq
import pytest
from pamqp import commands

from services.common.bus.base import BusError, BusRefused, unavailable
from services.common.bus.rabbit import _lost

CASES: dict[str, tuple[BaseException, bool]] = {
    "a nack (a quorum queue without a leader while a node is down)": (
        aiormq.exceptions.DeliveryError(None, commands.Basic.Nack(delivery_tag=5, multiple=True)),
        True,
    ),
    "a return (unroutable: the message's own fault)": (
        aiormq.exceptions.DeliveryError(None, commands.Basic.Return(reply_code=312)),
        False,
    ),
    "the connection reset": (ConnectionResetError(104, "reset"), True),
    "a confirm that did not come in time": (TimeoutError(), True),
    "a frame error the message caused": (aiormq.exceptions.ConnectionFrameError(), False),
    "access refused on the channel": (aiormq.exceptions.ChannelAccessRefused(), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_failed_publish_is_lost_only_when_retrying_may_help(case: str) -> None:
    failure, lost = CASES[case]
    assert _lost(failure) is lost


def test_a_nack_leaves_the_batch_to_be_retried_not_dead_lettered() -> None:
    assert unavailable(BusError("1 of 1 messages not confirmed: nack"))
    assert not unavailable(BusRefused("routing key too long"))
