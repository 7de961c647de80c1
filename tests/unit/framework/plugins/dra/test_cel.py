"""The selectors' CEL environment: upstream's ``dynamic-resource-allocation/cel``
compile_test.go cases (by upstream's names; the list-type attribute cases belong to
the alpha DRAListTypeAttributes gate and are not ported), then the quantity and semver
libraries and the error texts."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from contracts.k8s.resource import Device, DeviceAttribute, DeviceCapacity
from services.framework.plugins.dynamicresources.allocator.cel import (
    CELCache,
    CELRuntimeError,
    CompiledSelector,
)

CACHE = CELCache()


@dataclass
class Selector:
    expression: str
    driver: str = ""
    attributes: dict[str, DeviceAttribute] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    match: bool = False
    compile_error: str = ""
    match_error: str = ""


def _b(value: bool) -> DeviceAttribute:
    return DeviceAttribute(bool_=value)


DRA = "dra.example.com"
ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

UPSTREAM: dict[str, Selector] = {
    "true": Selector("true", match=True),
    "false": Selector("false", match=False),
    "syntax-error": Selector("?!", compile_error="Syntax error"),
    "type-error": Selector("1", compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Selector(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "runtime-error-lookup-map": Selector(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr",
    ),
    "domain-check-negative": Selector('"no-such-domain" in device.attributes', match=False),
    "domain-check-positive": Selector(
        '"dra.example.com" in device.attributes',
        attributes={"dra.example.com/something": _b(True)},
        match=True,
    ),
    "empty-driver-name": Selector('device.driver == ""', match=True),
    "real-driver-name": Selector('device.driver == "dra.example.com"', driver=DRA, match=True),
    "driver-name-qualifier": Selector(
        'device.attributes["dra.example.com"].name',
        driver=DRA,
        attributes={"name": _b(True)},
        match=True,
    ),
    "driver-name-qualifier-map-lookup": Selector(
        'device.attributes["dra.example.com"]["name"]',
        driver=DRA,
        attributes={"name": _b(True)},
        match=True,
    ),
    "bind": Selector(
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        driver=DRA,
        attributes={"name": _b(True)},
        match=True,
    ),
    "qualified-attribute-name": Selector(
        'device.attributes["other.example.com"].name',
        driver=DRA,
        attributes={"other.example.com/name": _b(True)},
        match=True,
    ),
    "bool": Selector(
        'device.attributes["dra.example.com"].name',
        driver=DRA,
        attributes={"name": _b(True)},
        match=True,
    ),
    "int": Selector(
        'device.attributes["dra.example.com"].name > 0',
        driver=DRA,
        attributes={"name": DeviceAttribute(int_=1)},
        match=True,
    ),
    "string": Selector(
        'device.attributes["dra.example.com"].name == "fish"',
        driver=DRA,
        attributes={"name": DeviceAttribute(string="fish")},
        match=True,
    ),
    "version": Selector(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        driver=DRA,
        attributes={"name": DeviceAttribute(version="1.0.0")},
        match=True,
    ),
    "version_v": Selector(
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && '
        'isSemver("v1.0.0", true)',
        driver=DRA,
        attributes={"name": DeviceAttribute(version="1.0.0")},
        match=True,
    ),
    "quantity": Selector(
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRA,
        capacity={"name": "1Mi"},
        match=True,
    ),
    "check-positive": Selector(
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        driver=DRA,
        capacity={"name": "1Mi"},
        match=True,
    ),
    "check-negative": Selector(
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        match=True,
    ),
    "all": Selector(
        ALL,
        driver=DRA,
        attributes={
            "bool": _b(True),
            "int": DeviceAttribute(int_=1),
            "string": DeviceAttribute(string="fish"),
            "version": DeviceAttribute(version="1.0.0"),
        },
        capacity={"quantity": "1Mi"},
        match=True,
    ),
    "many": Selector(
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        driver=DRA,
        attributes={"a": _b(True), "b": _b(True), "c": _b(True)},
        match=True,
    ),
    "check_attribute_domains": Selector(
        'device.attributes.exists_one(x, x == "dra.example.com")',
        driver=DRA,
        attributes={"services": DeviceAttribute(string="some_example_value")},
        match=True,
    ),
    "check_attribute_ids": Selector(
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        driver=DRA,
        attributes={"services": DeviceAttribute(string="some_example_value")},
        match=True,
    ),
    "split_attribute": Selector(
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        driver=DRA,
        attributes={"services": DeviceAttribute(string="some_example_value")},
        match=True,
    ),
    "regexp_attribute": Selector(
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        driver=DRA,
        attributes={"services": DeviceAttribute(string="asymetric")},
        match=True,
    ),
    "check_capacity_domains": Selector(
        'device.capacity.exists_one(x, x == "dra.example.com")',
        driver=DRA,
        capacity={"memory": "1Mi"},
        match=True,
    ),
    "check_capacity_ids": Selector(
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        driver=DRA,
        capacity={"memory": "1Mi"},
        match=True,
    ),
    "expensive": Selector(
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
        driver=DRA,
        match_error="actual cost limit exceeded",
    ),
}

LIBRARIES: dict[str, Selector] = {
    "quantity-compare-to": Selector(
        'device.capacity["dra.example.com"].memory.compareTo(quantity("10Gi")) >= 0',
        driver=DRA,
        capacity={"memory": "16Gi"},
        match=True,
    ),
    "quantity-is-less-than": Selector(
        'device.capacity["dra.example.com"].memory.isLessThan(quantity("10Gi"))',
        driver=DRA,
        capacity={"memory": "16Gi"},
        match=False,
    ),
    "quantity-semantic-equality": Selector('quantity("1Gi") == quantity("1024Mi")', match=True),
    "quantity-arithmetic": Selector(
        'quantity("1.5").add(quantity("500m")).asInteger() == 2 && quantity("2").sub(3).sign() '
        '== -1 && !quantity("1.5").isInteger() && quantity("250m").asApproximateFloat() == 0.25',
        match=True,
    ),
    "quantity-is-quantity": Selector('isQuantity("1Gi") && !isQuantity("1 Gi")', match=True),
    "quantity-parse-error": Selector(
        'quantity("1 Gi").sign() == 1',
        match_error="quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    "quantity-as-integer-error": Selector(
        'quantity("1.5").asInteger() == 1', match_error="cannot convert value to integer"
    ),
    "semver-parts": Selector(
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && '
        'semver("1.2.3").patch() == 3',
        match=True,
    ),
    "semver-precedence": Selector(
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1")) && '
        'semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-beta")) && '
        'semver("1.0.0-beta.11").isGreaterThan(semver("1.0.0-beta.2")) && '
        'semver("1.0.0-rc.1").isLessThan(semver("1.0.0")) && '
        'semver("1.10.0").compareTo(semver("1.9.0")) == 1',
        match=True,
    ),
    "semver-normalize": Selector(
        'semver("01.01.01", true) == semver("1.1.1") && semver("1.0", true) == semver("1.0.0") '
        '&& !isSemver("v1.0")',
        match=True,
    ),
    "semver-parse-error": Selector(
        'semver("Three") == semver("1.0.0")', match_error="No Major.Minor.Patch elements found"
    ),
    "semver-leading-zero-error": Selector(
        'semver("01.0.0") == semver("1.0.0")',
        match_error='Major number must not contain leading zeroes "01"',
    ),
    "semver-and-quantity-do-not-mix": Selector(
        'semver("1.0.0").isGreaterThan(quantity("1"))',
        compile_error="found no matching overload for 'isGreaterThan' applied to "
        "'(kubernetes.Semver, kubernetes.Quantity)'",
    ),
    "regex-find": Selector(
        '"abc 123".find("[0-9]+") == "123" && "a1b2".findAll("[0-9]") == ["1", "2"] && '
        '"a1b2c3".findAll("[0-9]", 2) == ["1", "2"]',
        match=True,
    ),
    "undeclared-variable": Selector(
        "noSuchVar",
        compile_error="compilation failed: ERROR: <input>:1:1: undeclared reference to "
        "'noSuchVar' (in container '')\n | noSuchVar\n | ^",
    ),
    "non-bool-result": Selector(
        "device.driver", match_error="CEL result of type string could not be converted to bool"
    ),
    "bad-version-attribute": Selector(
        "true",
        attributes={"v": DeviceAttribute(version="1.0")},
        match_error="attribute v: parse semantic version: No Major.Minor.Patch elements found",
    ),
    "unsupported-attribute-value": Selector(
        "true",
        attributes={"x": DeviceAttribute()},
        match_error="attribute x: unsupported attribute value",
    ),
}


def _evaluate(case: Selector) -> None:
    compiled = CACHE.get_or_compile(case.expression)
    if case.compile_error:
        assert compiled.error is not None and case.compile_error in compiled.error
        return
    assert compiled.error is None
    device = Device(
        name="d",
        attributes=case.attributes,
        capacity={k: DeviceCapacity(value=v) for k, v in case.capacity.items()},
    )
    data = CACHE.device_input(case.driver, device)
    if case.match_error:
        with pytest.raises(CELRuntimeError) as caught:
            compiled.device_matches(CACHE.env, data)
        assert case.match_error in str(caught.value)
        return
    assert compiled.device_matches(CACHE.env, data) is case.match


@pytest.mark.parametrize("case", UPSTREAM.values(), ids=UPSTREAM.keys())
def test_upstream_selector(case: Selector) -> None:
    _evaluate(case)


@pytest.mark.parametrize("case", LIBRARIES.values(), ids=LIBRARIES.keys())
def test_kubernetes_libraries(case: Selector) -> None:
    _evaluate(case)


def test_no_such_key_hint_is_upstreams() -> None:
    with pytest.raises(CELRuntimeError) as caught:
        _evaluate_raw('device.attributes["dra.example.com"].gone', DRA)
    assert str(caught.value) == (
        "no such key: gone. Consider using CEL optional chaining (?), has() macro, or "
        "orValue() for optional fields"
    )


def _evaluate_raw(expression: str, driver: str) -> bool:
    compiled = CACHE.get_or_compile(expression)
    assert compiled.error is None
    return compiled.device_matches(CACHE.env, CACHE.device_input(driver, Device(name="d")))


def test_each_expression_is_compiled_once() -> None:
    cache = CELCache()
    first = cache.get_or_compile('device.driver == "x"')
    assert cache.get_or_compile('device.driver == "x"') is first
    assert len(cache.compiled) == 1


def test_device_input_is_built_once_per_device() -> None:
    cache = CELCache()
    device = Device(name="d", attributes={"a": DeviceAttribute(int_=1)})
    assert cache.device_input(DRA, device) is cache.device_input(DRA, device)
    assert cache.device_input(DRA, device) is not cache.device_input("other", device)


def test_a_selector_is_evaluated_once_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = CompiledSelector.device_matches

    def counting(self: CompiledSelector, env: object, data: object) -> bool:
        calls.append(self.expression)
        return original(self, env, data)  # type: ignore[arg-type]

    monkeypatch.setattr(CompiledSelector, "device_matches", counting)
    cache = CELCache()
    compiled = cache.get_or_compile('device.driver == "x"')
    device = Device(name="d")
    assert [cache.matches(compiled, "x", device) for _ in range(3)] == [True, True, True]
    assert cache.matches(compiled, "y", device) is False
    assert calls == ['device.driver == "x"'] * 2


@pytest.mark.parametrize(("flag", "match"), [(True, True), (None, False)])
def test_allow_multiple_allocations(flag: bool | None, match: bool) -> None:
    """Upstream's ``allow_multiple_allocations`` and ``..._default``."""
    compiled = CACHE.get_or_compile("device.allowMultipleAllocations == true")
    device = Device(name=f"d-{flag}", allow_multiple_allocations=flag)
    assert compiled.device_matches(CACHE.env, CACHE.device_input(DRA, device)) is match
