"""The settings of a replicated deployment: a list of brokers, the queue type, and the
stream log's retention."""

from __future__ import annotations

import re

import msgspec
import pytest

from services.common.settings import from_env

ONE = "amqp://u:p@node1:5672/"
TWO = "amqp://u:p@node1:5672/,amqp://u:p@node2:5672/"


@pytest.mark.parametrize(
    ("env", "quorum"),
    [
        ({"KSCHED_AMQP_URL": ONE}, False),
        ({"KSCHED_AMQP_URL": TWO}, True),
        ({"KSCHED_AMQP_URL": ONE, "KSCHED_QUEUE_TYPE": "quorum"}, True),
        ({"KSCHED_AMQP_URL": TWO, "KSCHED_QUEUE_TYPE": "classic"}, False),
        ({"KSCHED_AMQP_URL": "memory://"}, False),
    ],
    ids=["one-broker", "a-cluster", "asked-quorum", "asked-classic", "memory"],
)
def test_queue_type(env: dict[str, str], quorum: bool) -> None:
    assert from_env(env).quorum_queues is quorum


def test_stream_retention_comes_from_the_environment() -> None:
    settings = from_env(
        {"KSCHED_STREAM_MAX_AGE": "7D", "KSCHED_STREAM_MAX_LENGTH_BYTES": "1000000000"}
    )
    assert settings.informer.stream_max_age == "7D"
    assert settings.informer.stream_max_length_bytes == 1_000_000_000


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KSCHED_AMQP_URL": f"{ONE},"}, "amqp_url (KSCHED_AMQP_URL): broker 2 of 2 is empty"),
        (
            {"KSCHED_QUEUE_TYPE": "mirrored"},
            "queue_type (KSCHED_QUEUE_TYPE): Invalid enum value 'mirrored'",
        ),
        ({"KSCHED_STREAM_MAX_AGE": "7 days"}, "stream_max_age (KSCHED_STREAM_MAX_AGE)"),
        ({"KSCHED_STREAM_MAX_AGE": "0D"}, "stream_max_age (KSCHED_STREAM_MAX_AGE)"),
        ({"KSCHED_STREAM_MAX_LENGTH_BYTES": "1G"}, "(KSCHED_STREAM_MAX_LENGTH_BYTES): '1G'"),
        ({"KSCHED_STREAM_MAX_LENGTH_BYTES": "-1"}, "(KSCHED_STREAM_MAX_LENGTH_BYTES): -1"),
    ],
    ids=["stray-comma", "queue-type", "age-words", "age-zero", "size-unit", "size-negative"],
)
def test_bad_values_are_one_line_naming_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises((msgspec.ValidationError, ValueError), match=re.escape(message)) as caught:
        from_env(env)
    assert "\n" not in str(caught.value)
