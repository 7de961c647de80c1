"""The README's package map is rendered from the packages' opening docstrings
(ops/package_map.py), and every package says what belongs in it and what does not."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("package_map", ROOT / "ops" / "package_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


package_map = _load_generator()

PENDING_NOT_HERE: set[str] = set()
"""Packages whose docstring does not say yet what does not belong in them."""


def _all_packages() -> list[Path]:
    """Every package under contracts/, services/ and bench/, at any depth."""
    return sorted(
        init.parent
        for top in ("contracts", "services", "bench")
        for init in (ROOT / top).rglob("__init__.py")
    )


def test_the_readme_package_map_is_rendered_from_the_docstrings() -> None:
    readme = (ROOT / "README.md").read_text()
    assert package_map.readme_map(readme) == package_map.render(ROOT), (
        "README.md's package map differs from the docstrings: "
        "run python3 ops/package_map.py --write"
    )


@pytest.mark.parametrize("package", _all_packages(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_package_says_what_belongs_and_what_does_not(package: Path) -> None:
    summary, not_here = package_map.belongs(package_map.docstring(package))
    assert summary, "the package's __init__.py has no opening docstring"
    assert not summary.startswith(package_map.NOT_HERE), "what belongs comes first"
    if str(package.relative_to(ROOT)) not in PENDING_NOT_HERE:
        assert not_here, 'no paragraph starting "Not here:" after the first one'


def test_the_map_stops_at_a_plugin_package() -> None:
    mapped = {package.relative_to(ROOT).as_posix() for package, _ in package_map.packages(ROOT)}
    assert {"contracts/k8s", "services/common/k8s", "services/framework/runtime"} <= mapped
    assert "services/framework/plugins/coscheduling" not in mapped
    assert {"bench", "tests"} <= mapped and "tests/unit" not in mapped


def test_a_changed_docstring_puts_the_readme_out_of_step(tmp_path: Path) -> None:
    for name, _ in package_map.ROOTS:
        for init in (ROOT / name).rglob("__init__.py"):
            copy = tmp_path / init.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(init, copy)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    assert package_map.main(["--check"], root=tmp_path) == 0

    init = tmp_path / "services" / "binder" / "__init__.py"
    init.write_text(init.read_text().replace("The binder service", "The binding service", 1))
    assert package_map.main(["--check"], root=tmp_path) == 1

    assert package_map.main(["--write"], root=tmp_path) == 0
    assert package_map.main(["--check"], root=tmp_path) == 0
    assert "The binding service" in (tmp_path / "README.md").read_text()
