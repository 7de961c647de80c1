"""The CEL environment of DRA selectors (upstream's ``dynamic-resource-allocation/cel``)
on cel-expr-python (Google's cel-cpp).

A selector sees one variable, ``device``, with ``driver`` (string), ``attributes``
(domain -> name -> int, bool, string or ``kubernetes.Semver``), ``capacity``
(domain -> name -> ``kubernetes.Quantity``) and ``allowMultipleAllocations`` (bool).
An attribute or capacity given by an unqualified name sits in the driver's domain.
Looking up a domain the device does not have gives an empty map, so
``device.attributes["other.example.com"].x`` fails with "no such key" rather than a
missing domain (upstream's ``mapper`` default).

:class:`CELCache` compiles each expression text once (upstream's ``cel.Cache``) and
keeps, for as long as a Device object lives (slices are immutable; a new generation
brings new objects), its CEL input and each selector's result on it, so a scheduling
cycle does not evaluate again what the previous one did.

Departures: the runtime cost limit (``CELSelectorExpressionMaxCost``, 1e6 cost units)
is replaced by cel-cpp's comprehension iteration budget (a few thousand iterations;
the Python binding exposes no cost tracking), reported with cel-go's text. The
empty-map default covers domains written as string literals in the expression
(``attributes["domain"]``), not computed ones, and such a literal also makes
``"domain" in device.attributes`` true. Of Kubernetes' CEL libraries only quantity,
semver, regex find/findAll and the CEL strings/math/optional/bindings extensions are
there (lists, sets, url, ip, cidr and format are undeclared). Runtime errors other
than "no such key" keep cel-cpp's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings

from contracts.k8s.resource import Device, DeviceAttribute
from contracts.quantity import QuantityError, parse_quantity
from services.framework.plugins.dynamicresources.allocator.celtypes import (
    POOL,
    function_decls,
    quantity_message,
    semver_message,
)

DEVICE_VAR: Final = "device"
NO_SUCH_KEY_HINT: Final = (
    ". Consider using CEL optional chaining (?), has() macro, or orValue() for optional fields"
)
_DOMAIN_LITERAL: Final = re.compile(r"""(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')""")
_STATUS_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX: Final = re.compile(r" \[[A-Z_]+\]$")
_NOT_FOUND: Final = re.compile(r'^Key not found in map ?: ?"?(.*?)"?$')
_ITERATION_BUDGET: Final = "Iteration budget exceeded"
COST_LIMIT_EXCEEDED: Final = "operation cancelled: actual cost limit exceeded"
"""cel-go's text when a selector goes over its cost limit; ksched gives it when cel-cpp's
comprehension iteration budget runs out, the bound it has instead."""
_MAX_INPUTS: Final = 100_000
_MAX_RESULTS: Final = 1_000_000
_MAX_EXPRESSIONS: Final = 10_000
"""Bounds on the caches: past one, it starts again (devices and selectors change
rarely, so this is a guard against unbounded growth, not an eviction policy)."""


class CELRuntimeError(Exception):
    """A selector failed at run time; the message is cel-go's (upstream's) text."""


def _env() -> cel.Env:
    return cel.NewEnv(
        POOL,
        variables={DEVICE_VAR: cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[
            ext_bindings.ExtBindings(),
            ext_strings.ExtStrings(),
            ext_math.ExtMath(),
            ext_optional.ExtOptional(),
        ],
        functions=function_decls(),
    )


def _status_text(err: Exception | str) -> str:
    text = str(err)
    text = _STATUS_PREFIX.sub("", text, count=1)
    return _STATUS_SUFFIX.sub("", text)


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """One device as a selector sees it."""

    attributes: dict[str, dict[str, Any]]
    capacity: dict[str, dict[str, Any]]
    data: dict[str, Any]
    activation: Any
    error: str | None = None
    """Set when an attribute cannot be represented (a bad version string)."""


@dataclass(slots=True)
class CompiledSelector:
    """``CompilationResult``: a program, or the compile error's text."""

    expression: str
    program: Any = None
    error: str | None = None
    domains: tuple[tuple[str, str], ...] = ()
    """The (``attributes``|``capacity``, domain) string literals the expression indexes."""

    def device_matches(self, env: cel.Env, device: DeviceInput) -> bool:
        """``DeviceMatches``; raises :class:`CELRuntimeError` with upstream's text."""
        if device.error is not None:
            raise CELRuntimeError(device.error)
        missing = [
            (kind, domain)
            for kind, domain in self.domains
            if domain not in (device.attributes if kind == "attributes" else device.capacity)
        ]
        try:
            if missing:
                result = self.program.eval(data=_with_empty_domains(device, missing))
            else:
                result = self.program.eval(device.activation)
            value = result.value()
        except Exception as err:  # cel-cpp reports every evaluation error this way
            raise CELRuntimeError(_runtime_text(err)) from None
        if isinstance(value, bool):
            return value
        if result.type() == cel.Type.ERROR:
            raise CELRuntimeError(_runtime_text(value))
        raise CELRuntimeError(
            f"CEL result of type {_type_name(result.type())} could not be converted to bool: "
            "type conversion error"
        )


def _with_empty_domains(device: DeviceInput, missing: list[tuple[str, str]]) -> dict[str, Any]:
    attributes, capacity = dict(device.attributes), dict(device.capacity)
    for kind, domain in missing:
        (attributes if kind == "attributes" else capacity)[domain] = {}
    outer = dict(device.data[DEVICE_VAR])
    outer["attributes"], outer["capacity"] = attributes, capacity
    return {DEVICE_VAR: outer}


def _type_name(t: cel.Type) -> str:
    """cel-go's spelling of a type (``int``, ``string``, ``map(string, dyn)``)."""
    name = str(t.name())
    return name.lower() if name.isupper() else name


def _runtime_text(err: Exception | str) -> str:
    text = _status_text(err)
    found = _NOT_FOUND.match(text)
    if found:
        return f"no such key: {found[1]}{NO_SUCH_KEY_HINT}"
    if text == _ITERATION_BUDGET:
        return COST_LIMIT_EXCEEDED
    return text


def _attribute_value(attr: DeviceAttribute) -> Any:
    if attr.int_ is not None:
        return attr.int_
    if attr.bool_ is not None:
        return attr.bool_
    if attr.string is not None:
        return attr.string
    if attr.version is not None:
        try:
            return semver_message(attr.version)
        except ValueError as err:
            raise ValueError(f"parse semantic version: {err}") from None
    raise ValueError("unsupported attribute value")


def _split(name: str, default_domain: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


@dataclass(slots=True)
class CELCache:
    """Compiled selectors by expression text and device inputs by Device, long-lived
    and shared by every Allocator (upstream's ``cel.Cache``)."""

    env: cel.Env = field(default_factory=_env)
    compiled: dict[str, CompiledSelector] = field(default_factory=dict)
    inputs: dict[int, tuple[Device, str, DeviceInput]] = field(default_factory=dict)
    results: dict[tuple[str, int], tuple[Device, str, bool]] = field(default_factory=dict)

    def get_or_compile(self, expression: str) -> CompiledSelector:
        found = self.compiled.get(expression)
        if found is None:
            if len(self.compiled) >= _MAX_EXPRESSIONS:
                self.compiled.clear()
            found = self.compiled[expression] = self._compile(expression)
        return found

    def matches(self, compiled: CompiledSelector, driver: str, device: Device) -> bool:
        """``compiled`` (without compile error) on ``device``, evaluated once per Device
        object while it lives; raises :class:`CELRuntimeError` (errors are not kept)."""
        key = (compiled.expression, id(device))
        found = self.results.get(key)
        if found is not None and found[0] is device and found[1] == driver:
            return found[2]
        result = compiled.device_matches(self.env, self.device_input(driver, device))
        if len(self.results) >= _MAX_RESULTS:
            self.results.clear()
        self.results[key] = (device, driver, result)
        return result

    def _compile(self, expression: str) -> CompiledSelector:
        try:
            program = self.env.compile(expression)
        except Exception as err:  # cel-cpp reports parse and check errors this way
            return CompiledSelector(expression, error="compilation failed: " + _status_text(err))
        out = program.return_type()
        if out != cel.Type.BOOL and out != cel.Type.DYN:
            return CompiledSelector(
                expression,
                error=f"must evaluate to bool or the unknown type, not {_type_name(out)}",
            )
        domains = tuple(
            dict.fromkeys(
                (m[1], m[2] if m[2] is not None else m[3])
                for m in _DOMAIN_LITERAL.finditer(expression)
            )
        )
        return CompiledSelector(expression, program=program, domains=domains)

    def device_input(self, driver: str, device: Device) -> DeviceInput:
        """The device's CEL input, built once per Device object."""
        key = id(device)
        found = self.inputs.get(key)
        if found is not None and found[0] is device and found[1] == driver:
            return found[2]
        if len(self.inputs) >= _MAX_INPUTS:
            self.inputs.clear()
        made = self._make_input(driver, device)
        self.inputs[key] = (device, driver, made)
        return made

    def _make_input(self, driver: str, device: Device) -> DeviceInput:
        attributes: dict[str, dict[str, Any]] = {}
        error = None
        for name, attr in device.attributes.items():
            try:
                value = _attribute_value(attr)
            except ValueError as err:
                error = f"attribute {name}: {err}"
                continue
            domain, ident = _split(name, driver)
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in device.capacity.items():
            domain, ident = _split(name, driver)
            capacity.setdefault(domain, {})[ident] = quantity_message(_quantity(cap.value))
        data = {
            DEVICE_VAR: {
                "driver": driver,
                "attributes": attributes,
                "capacity": capacity,
                # Declared upstream while DRAConsumableCapacity is on (the default).
                "allowMultipleAllocations": bool(device.allow_multiple_allocations),
            }
        }
        return DeviceInput(attributes, capacity, data, self.env.Activation(data), error)


def _quantity(value: str | int | float) -> Any:
    try:
        return parse_quantity(value)
    except QuantityError:
        return parse_quantity(0)
