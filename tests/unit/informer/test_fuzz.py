"""Fuzzed input, deterministic (Hypothesis with derandomize=True, bounded examples):

- watch events mutated from valid ones of every kind ksched ingests, interleaved with
  valid ones, through the InformerService on the in-memory backends: every invalid event
  yields exactly one report naming its field, every valid one is logged and stored, no
  message is dead-lettered;
- ``simulate``'s manifest loading: ManifestError or success, never another exception;
- ``--config`` loading: ConfigError or success, never another exception.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from services.cli.manifests import ManifestError, check, read_documents
from services.common import features
from services.framework.api.registry import ConfigError
from services.framework.config.load import load_config
from tests.fuzz.events import generate
from tests.fuzz.run import run_embedded

FUZZ = settings(
    max_examples=200,
    deadline=timedelta(seconds=10),
    derandomize=True,
    database=None,
    # Shrinking a drawn Random is slow and gains little: the failing case is printed whole.
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True, scope="module")
def _workload_kinds() -> Iterator[None]:
    """Workload and the native PodGroup are fuzzed like every kind: their gate is on."""
    features.install(features.parse("GenericWorkload=true"))
    yield
    features.install(features.DEFAULTS)


@FUZZ
@given(rng=st.randoms(use_true_random=False), count=st.integers(1, 12))
def test_fuzzed_watch_events_are_refused_alone(rng: random.Random, count: int) -> None:
    cases = [generate(rng, i, invalid_share=0.8) for i in range(count)]
    outcome = asyncio.run(run_embedded(cases, chunk=8))
    assert outcome.mismatched == []
    assert [c.key for c in outcome.lost] == []
    assert outcome.crashes == 0
    assert outcome.recorded == sum(c.valid for c in cases)


def _manifest_text(rng: random.Random, i: int) -> str:
    """A fuzzed case as a user's file: YAML of its object where it decodes, else raw."""
    case = generate(rng, i, invalid_share=0.9)
    text = case.body.decode("utf-8", "replace")
    try:
        event = json.loads(text)
    except (ValueError, RecursionError):
        return text
    obj = event.get("object") if isinstance(event, dict) else event
    if isinstance(obj, dict):
        obj.setdefault("kind", case.kind.capitalize() if rng.random() < 0.5 else case.kind)
    try:
        return yaml.safe_dump(obj) if rng.random() < 0.7 else json.dumps(obj)
    except (RecursionError, ValueError):
        return text


@settings(FUZZ, max_examples=100)
@given(rng=st.randoms(use_true_random=False))
def test_fuzzed_manifests_load_or_fail_with_manifest_error(rng: random.Random) -> None:
    text = "---\n".join(_manifest_text(rng, i) for i in range(rng.randint(1, 3)))
    try:
        for document in read_documents(text, warn=lambda _: None):
            check(document, warn=lambda _: None)
    except ManifestError as error:
        assert "\n" not in str(error).strip() or "<input>" in str(error)


def _mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """``value`` with one random change somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.75:
        key = rng.choice(sorted(value))
        return {**value, key: _mutate(rng, value[key], depth + 1)}
    if isinstance(value, list) and value and rng.random() < 0.75:
        i = rng.randrange(len(value))
        return [*value[:i], _mutate(rng, value[i], depth + 1), *value[i + 1 :]]
    return rng.choice(
        [
            None, 0, -1, 2**70, 1.5, float("inf"), "", "x" * 10_000, "\uff11\uff10\uff10", "\x00",
            [], {}, [[[[[[[[]]]]]]]], {"unknownField": 1}, True, "NodeResourcesFit",
        ]
    )  # fmt: skip


@settings(FUZZ, max_examples=100)
@given(rng=st.randoms(use_true_random=False))
def test_fuzzed_configs_load_or_fail_with_config_error(
    rng: random.Random, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = yaml.safe_load((ROOT / "ops/examples/scheduler-config.yaml").read_text())
    config = base
    for _ in range(rng.randint(1, 3)):
        config = _mutate(rng, config)
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    text = yaml.safe_dump(config)
    if rng.random() < 0.2:
        text = text[: rng.randrange(len(text))]
    path.write_text(text)
    try:
        load_config(path)
    except ConfigError as error:
        assert str(path) in str(error)
