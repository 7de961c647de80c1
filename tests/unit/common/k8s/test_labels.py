"""Label selectors: nil / empty, the four operators, upstream's error messages, and
``labels.Parse`` + ``Matches`` (upstream's ``TestSelectorMatches`` in
apimachinery/pkg/labels/selector_test.go, without its ``>`` / ``<`` rows: the string
syntax here serves the descheduler's nodeSelector, which never uses them)."""

from __future__ import annotations

import pytest

from contracts.k8s import LabelSelector, LabelSelectorRequirement
from services.common.k8s.labels import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    label_selector_as_selector,
    matches_label_selector,
    parse,
)
from tests.builders.selectors import does_not_exist, exists, in_, not_in


def test_nil_selects_nothing_and_empty_selects_everything():
    assert label_selector_as_selector(None) == NOTHING
    assert not NOTHING.matches({}) and not NOTHING.empty()
    assert label_selector_as_selector(LabelSelector()) == EVERYTHING
    assert EVERYTHING.matches(None) and EVERYTHING.empty()


@pytest.mark.parametrize(
    ("requirement", "labels", "want"),
    [
        (in_("a", "1", "2"), {"a": "2"}, True),
        (in_("a", "1"), {"a": "3"}, False),
        (in_("a", "1"), {}, False),
        (not_in("a", "1"), {"a": "2"}, True),
        (not_in("a", "1"), {}, True),
        (not_in("a", "1"), {"a": "1"}, False),
        (exists("a"), {"a": ""}, True),
        (exists("a"), {"b": ""}, False),
        (does_not_exist("a"), {"b": ""}, True),
        (does_not_exist("a"), {"a": "x"}, False),
    ],
)
def test_operators(requirement, labels, want):
    selector = label_selector_as_selector(LabelSelector(match_expressions=[requirement]))
    assert selector.matches(labels) is want


def test_requirements_are_anded_with_match_labels():
    selector = label_selector_as_selector(
        LabelSelector(match_labels={"app": "web"}, match_expressions=[exists("tier")])
    )
    assert selector.matches({"app": "web", "tier": "x"})
    assert not selector.matches({"app": "web"})
    assert not selector.matches({"app": "db", "tier": "x"})


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (
            LabelSelectorRequirement(key="a", operator="Gt", values=["1"]),
            '"Gt" is not a valid label selector operator',
        ),
        (
            LabelSelectorRequirement(key="a", operator="In"),
            "values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            LabelSelectorRequirement(key="a", operator="Exists", values=["x"]),
            'values: Invalid value: []string{"x"}: '
            "values set must be empty for exists and does not exist",
        ),
        (
            in_("a", "x" * 64),
            f'values[0][a]: Invalid value: "{"x" * 64}": must be no more than 63 characters',
        ),
        (
            exists("bad key"),
            'key: Invalid value: "bad key": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            exists("Example.com/x"),
            'key: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ],
)
def test_invalid_selectors_fail_with_upstreams_message(requirement, message):
    with pytest.raises(SelectorError) as err:
        label_selector_as_selector(LabelSelector(match_expressions=[requirement]))
    assert str(err.value) == message


def test_prefixed_keys_are_valid():
    selector = label_selector_as_selector(
        LabelSelector(match_expressions=[exists("example.com/app")])
    )
    assert selector.matches({"example.com/app": "1"})


def test_a_selector_that_does_not_build_matches_nothing():
    bad = LabelSelector(match_expressions=[LabelSelectorRequirement(key="a", operator="In")])
    assert not matches_label_selector(bad, {"a": "1"})
    assert not matches_label_selector(None, {"a": "1"})
    assert matches_label_selector(LabelSelector(), {"a": "1"})


LABELSET = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "labels", "want"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("foo=bar", LABELSET, True),
        ("baz=blah", LABELSET, True),
        ("foo=bar,baz=blah", LABELSET, True),
        ("foo=blah", LABELSET, False),
        ("baz=bar", LABELSET, False),
        ("foo=bar,foobar=bar,baz=blah", LABELSET, False),
    ],
)
def test_selector_matches(text, labels, want):
    assert parse(text).matches(labels) is want


@pytest.mark.parametrize("text", ["!x=a", "x in a", "x in (a", "a b"])
def test_parse_refuses(text):
    with pytest.raises(SelectorError):
        parse(text)
