"""``NodeAffinityArgs`` (kubescheduler.config.k8s.io/v1): ``addedAffinity``, decoded
strictly and validated as ``ValidateNodeAffinityArgs`` does."""

from __future__ import annotations

from typing import Self

import msgspec

from contracts.k8s import NodeAffinity
from services.common.k8s.nodeaffinity import compile_preferred, compile_terms
from services.framework.api.registry import ConfigError, join_path


class _Strict(
    msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True, rename="camel"
):
    pass


class NodeSelectorRequirementArgs(_Strict, kw_only=True, frozen=True):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTermArgs(_Strict, kw_only=True, frozen=True):
    match_expressions: tuple[NodeSelectorRequirementArgs, ...] = ()
    match_fields: tuple[NodeSelectorRequirementArgs, ...] = ()


class NodeSelectorArgs(_Strict, kw_only=True, frozen=True):
    node_selector_terms: tuple[NodeSelectorTermArgs, ...] = ()


class PreferredSchedulingTermArgs(_Strict, kw_only=True, frozen=True):
    weight: int
    preference: NodeSelectorTermArgs


class AddedAffinity(_Strict, kw_only=True, frozen=True):
    required_during_scheduling_ignored_during_execution: NodeSelectorArgs | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[
        PreferredSchedulingTermArgs, ...
    ] = ()


class NodeAffinityArgs(_Strict, kw_only=True, frozen=True):
    added_affinity: AddedAffinity | None = None
    """Node affinity applied to every pod of the profile, on top of the pod's own."""

    def defaulted(self) -> Self:
        return self

    def node_affinity(self) -> NodeAffinity | None:
        """``addedAffinity`` as the API type the selectors compile from."""
        if self.added_affinity is None:
            return None
        return msgspec.convert(msgspec.to_builtins(self.added_affinity), NodeAffinity)

    def validate(self, path: str) -> None:
        """``ValidateNodeAffinityArgs``: every term of ``addedAffinity`` must parse."""
        affinity = self.node_affinity()
        if affinity is None:
            return
        base = join_path(path, "addedAffinity")
        required = affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            rpath = join_path(base, "requiredDuringSchedulingIgnoredDuringExecution")
            for term in compile_terms(required.node_selector_terms, rpath):
                if term.errors:
                    raise ConfigError(term.errors[0].field, term.errors[0].detail)
        ppath = join_path(base, "preferredDuringSchedulingIgnoredDuringExecution")
        preferred = affinity.preferred_during_scheduling_ignored_during_execution
        _, errors = compile_preferred(preferred, ppath)
        if errors:
            raise ConfigError(errors[0].field, errors[0].detail)
