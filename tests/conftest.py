"""What every test shares: no test writes the user's data directory. The informer's
default event log is ``$XDG_DATA_HOME/ksched/events.jsonl``; a test that starts one
without ``--event-log`` (the processes it spawns inherit the variable) writes it under
the session's tmp dir instead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data-home")))
        yield
