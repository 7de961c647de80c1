"""The workload files of ``ksched bench``: upstream scheduler_perf's config, strictly decoded.

Every ``*.yaml`` directly under :data:`WORKLOADS_DIR` is a list of test cases in upstream's
shape (``name``, ``defaultPodTemplatePath``, ``workloadTemplate`` of ``createNodes`` /
``createPods`` / ``churn`` ops with ``countParam: $param``, ``workloads`` with ``params``);
the file itself documents what ksched reads of it. Decoding is strict, as configuration
is: an unknown field, a missing template or a param no workload sets is a
:class:`WorkloadError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec
import yaml

from bench.dra import AnyObjects, DraSetup
from bench.steady import Steady, parse_duration
from bench.workload import Churn, Gangs, Template, Workload
from contracts.k8s import PodGroup, SchedulingPodGroup
from contracts.kinds import BINDING_KIND, KINDS
from services.cli.errors import InputError
from services.common import features
from services.framework.config import load_config

WORKLOADS_DIR: Final = Path(__file__).resolve().parents[1] / "ops" / "bench" / "workloads"
"""The checked-in workload files (``ops/bench/workloads`` of the checkout)."""
DEFAULT_NODE_TEMPLATE: Final = "templates/node-default.yaml"
DEFAULT_POD_TEMPLATE: Final = "templates/pod-default.yaml"
DEFAULT_POD_GROUP_TEMPLATE: Final = "templates/podgroup-default.yaml"
PERFORMANCE: Final = "performance"
"""The label of the workload whose params ``ksched bench`` scales to ``--nodes``."""


class WorkloadError(InputError):
    """A workload file, or a name, ``ksched bench`` cannot run (exit 2, one line)."""


class _Strict(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class LabelNodePrepareStrategy(_Strict, frozen=True, kw_only=True, rename="camel"):
    label_key: str
    label_values: Annotated[list[str], msgspec.Meta(min_length=1)]


class CreateNodesOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="createNodes", rename="camel"
):
    count_param: str | None = None
    count: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """A fixed count (upstream's ``count``), not scaled by ``--nodes``."""
    node_template_path: str = DEFAULT_NODE_TEMPLATE
    label_node_prepare_strategy: LabelNodePrepareStrategy | None = None


class CreatePodsOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="createPods", rename="camel"
):
    count_param: str | None = None
    count: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """A fixed count (upstream's; with ``steadyState``: the pods kept pending)."""
    pod_template_path: str | None = None
    namespace: str | None = None
    collect_metrics: bool = False
    steady_state: bool = False
    """Upstream's: keep ``count`` pods pending for ``durationParam`` (the measured op
    only): each bound pod is deleted and replaced (bench.steady)."""
    duration_param: str | None = None


class ChurnOp(_Strict, frozen=True, kw_only=True, tag_field="opcode", tag="churn", rename="camel"):
    """Upstream's ``churnOp``: ``mode``, ``number`` (create: steps, 0 for no end;
    recreate: slots, at least 1), ``intervalMilliseconds`` (default 500, upstream's),
    ``namespace``, ``templatePaths`` (objects of any kind ksched ingests)."""

    mode: Literal["create", "recreate"]
    template_paths: Annotated[list[str], msgspec.Meta(min_length=1)]
    interval_milliseconds: Annotated[int, msgspec.Meta(gt=0)] = 500
    number: Annotated[int, msgspec.Meta(ge=0)] = 0
    namespace: str | None = None


class CreatePodGroupsOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="createPodGroups", rename="camel"
):
    """ksched's own (scheduler_perf has no PodGroups): the measured pods join groups of
    the template's ``spec.minMember``, one PodGroup per group, created with the setup."""

    pod_group_template_path: str = DEFAULT_POD_GROUP_TEMPLATE


class CreateResourceDriverOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="createResourceDriver",
    rename="camel",
):  # fmt: skip
    """Upstream's: a ResourceSlice of ``maxClaimsPerNode`` devices per node of the scaled
    createNodes op (``nodes``, upstream's glob over node names, is read and not needed:
    ksched's DRA test cases have only DRA nodes)."""

    driver_name: str
    max_claims_per_node_param: str
    nodes: str | None = None


class CreateAnyOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="createAny", rename="camel"
):
    """Upstream's: objects of any kind ksched ingests from ``templatePath``, one or
    ``countParam`` (scaled as the pods are), in ``namespace`` for namespaced kinds."""

    template_path: str
    namespace: str | None = None
    count_param: str | None = None


class AllocResourceClaimsOp(
    _Strict, frozen=True, kw_only=True, tag_field="opcode", tag="allocResourceClaims",
    rename="camel",
):  # fmt: skip
    """Upstream's: the claims created so far in ``namespace`` are allocated up front."""

    namespace: str


Op = (
    CreateNodesOp
    | CreatePodsOp
    | ChurnOp
    | CreatePodGroupsOp
    | CreateResourceDriverOp
    | CreateAnyOp
    | AllocResourceClaimsOp
)


class WorkloadParams(_Strict, frozen=True, kw_only=True):
    """One of a test case's ``workloads``: upstream's ``workload``."""

    name: str
    labels: list[str] = []
    params: dict[str, Any]
    """Counts by param name (checked by the loader, which names a bad one)."""


class TestCase(_Strict, frozen=True, kw_only=True, rename="camel"):
    name: str
    scheduler_config_path: str | None = None
    """A KubeSchedulerConfiguration the services run with (upstream's field)."""
    default_pod_template_path: str | None = None
    feature_gates: dict[str, bool] = {}
    """Upstream's ``featureGates``: the gates the test case turns on or off."""
    workload_template: Annotated[list[Op], msgspec.Meta(min_length=2)]
    workloads: list[WorkloadParams]


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def load_workloads(directory: Path = WORKLOADS_DIR) -> dict[str, Workload]:
    """Every test case of every workload file in ``directory``, by name."""
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise WorkloadError(f"{shown(directory)}: no workload file (*.yaml) found")
    workloads: dict[str, Workload] = {}
    for path in files:
        for workload in load_file(path):
            if workload.name in workloads:
                raise WorkloadError(f"{shown(path)}: name: {workload.name} is defined twice")
            workloads[workload.name] = workload
    return workloads


def workload_named(name: str, directory: Path = WORKLOADS_DIR) -> Workload:
    workloads = load_workloads(directory)
    if name not in workloads:
        known = ", ".join(sorted(workloads))
        raise WorkloadError(
            f"{shown(directory)}/*.yaml: name: no test case named {name!r} "
            f"(known: {known}; QueueOps is the queue's own)"
        )
    return workloads[name]


def load_file(path: Path) -> list[Workload]:
    try:
        cases = msgspec.convert(yaml.safe_load(path.read_text()), list[TestCase])
    except OSError as error:
        raise WorkloadError(f"cannot open {shown(path)}: {error.strerror}") from error
    except (yaml.YAMLError, msgspec.ValidationError) as error:
        raise WorkloadError(f"{shown(path)}: {error}") from error
    return [_workload(path, i, case) for i, case in enumerate(cases)]


def _workload(path: Path, index: int, case: TestCase) -> Workload:
    where = f"{shown(path)}: $[{index}] ({case.name})"
    params = _performance_params(where, case)
    ops = case.workload_template
    leading = next((i for i, op in enumerate(ops) if not isinstance(op, CreateNodesOp)), len(ops))
    node_ops = [(i, op) for i, op in enumerate(ops[:leading]) if isinstance(op, CreateNodesOp)]
    scaled = [(i, op) for i, op in node_ops if op.count_param is not None]
    if (
        len(scaled) != 1
        or any(isinstance(op, CreateNodesOp) for op in ops[leading:])
        or any((op.count is None) == (op.count_param is None) for _, op in node_ops)
    ):
        raise WorkloadError(
            f"{where}.workloadTemplate: the createNodes ops come first, one with countParam "
            "(what --nodes sets), any others with a fixed count (not both)"
        )
    scaled_at, nodes_op = scaled[0]
    measured_at = len(ops) - 1
    measured_op = ops[measured_at]
    if not isinstance(measured_op, CreatePodsOp) or not measured_op.collect_metrics:
        raise WorkloadError(
            f"{where}.workloadTemplate[{measured_at}]: the last op is the measured "
            "createPods (collectMetrics: true)"
        )
    init: tuple[int, CreatePodsOp] | None = None
    churn: tuple[int, ChurnOp] | None = None
    gangs: tuple[int, CreatePodGroupsOp] | None = None
    dra: list[tuple[int, CreateResourceDriverOp | CreateAnyOp | AllocResourceClaimsOp]] = []
    for i, op in enumerate(ops[leading:measured_at], start=leading):
        if isinstance(op, CreateResourceDriverOp | CreateAnyOp | AllocResourceClaimsOp):
            dra.append((i, op))
        elif isinstance(op, CreatePodsOp) and init is None and not op.collect_metrics:
            init = (i, op)
        elif isinstance(op, ChurnOp) and churn is None:
            churn = (i, op)
        elif isinstance(op, CreatePodGroupsOp) and gangs is None:
            gangs = (i, op)
        else:
            raise WorkloadError(
                f"{where}.workloadTemplate[{i}]: at most one init createPods (without "
                "collectMetrics), one churn and one createPodGroups op, and the DRA ops "
                "(createResourceDriver, createAny, allocResourceClaims) before the measured "
                "createPods"
            )

    def count(i: int, op: CreateNodesOp | CreatePodsOp) -> int:
        if isinstance(op, CreatePodsOp) and op.count is not None and op.count_param is None:
            return op.count
        param = op.count_param or ""
        name = param.removeprefix("$")
        if not param.startswith("$") or not isinstance(params.get(name), int):
            raise WorkloadError(
                f"{where}.workloadTemplate[{i}].countParam: {param!r} is not "
                f"$<a count param of the {PERFORMANCE} workload> ({', '.join(sorted(params))})"
            )
        value = params[name]
        assert isinstance(value, int)
        return value

    def steady(i: int, op: CreatePodsOp) -> Steady | None:
        if not op.steady_state:
            return None
        name = (op.duration_param or "").removeprefix("$")
        value = params.get(name)
        seconds = parse_duration(value) if isinstance(value, str) else None
        if op.duration_param is None or seconds is None:
            raise WorkloadError(
                f"{where}.workloadTemplate[{i}].durationParam: {op.duration_param!r} is not "
                f"$<a duration param (10s) of the {PERFORMANCE} workload>"
            )
        return Steady(count(i, op), seconds)

    def pod_template(i: int, op: CreatePodsOp) -> Template:
        field = f"workloadTemplate[{i}].podTemplatePath"
        if op.pod_template_path is None and case.default_pod_template_path is not None:
            field = "defaultPodTemplatePath"
        relative = op.pod_template_path or case.default_pod_template_path
        return _template(path, f"{where}.{field}", relative or DEFAULT_POD_TEMPLATE, "Pod")

    reference_nodes = count(scaled_at, nodes_op)
    if reference_nodes == 0:
        raise WorkloadError(
            f"{where}.workloadTemplate[{scaled_at}].countParam: the node count is 0"
        )
    strategy = nodes_op.label_node_prepare_strategy
    return Workload(
        name=case.name,
        node_template=_template(
            path, f"{where}.workloadTemplate[{scaled_at}].nodeTemplatePath",
            nodes_op.node_template_path, "Node",
        ),
        fixed_nodes=tuple(
            (_fixed_nodes_template(path, where, i, op), op.count or 0)
            for i, op in node_ops
            if op.count is not None
        ),
        init_pod=None if init is None else pod_template(*init),
        measured_pod=pod_template(measured_at, measured_op),
        init_namespace="" if init is None else _namespace(*init),
        measured_namespace=_namespace(measured_at, measured_op),
        reference_nodes=reference_nodes,
        init_pods=0 if init is None else count(*init),
        measured_pods=count(measured_at, measured_op),
        steady=steady(measured_at, measured_op),
        node_label=None
        if strategy is None
        else (strategy.label_key, tuple(strategy.label_values)),
        churn=None if churn is None else _churn(path, where, *churn),
        gangs=None if gangs is None else _gangs(path, where, *gangs),
        dra=_dra(path, where, dra, params) if dra else None,
        scheduler_config=None
        if case.scheduler_config_path is None
        else _scheduler_config(path, where, case.scheduler_config_path),
        feature_gates=_feature_gates(where, case.feature_gates),
    )  # fmt: skip


def _feature_gates(where: str, gates: dict[str, bool]) -> str:
    """The test case's ``featureGates`` as ``--feature-gates`` text, checked as the
    flag is (a gate ksched does not know or implement is refused here)."""
    text = ",".join(f"{name}={str(on).lower()}" for name, on in sorted(gates.items()))
    try:
        features.parse(text)
    except ValueError as error:
        raise WorkloadError(f"{where}.featureGates: {error}") from error
    return text


def _fixed_nodes_template(path: Path, where: str, index: int, op: CreateNodesOp) -> Template:
    """A fixed-count op's node template; one with a ``metadata.name`` (upstream's
    node-with-name.yaml) makes exactly one node."""
    field = f"{where}.workloadTemplate[{index}].nodeTemplatePath"
    return _template(path, field, op.node_template_path, "Node", named=op.count == 1)


def _churn(path: Path, where: str, index: int, op: ChurnOp) -> Churn:
    if op.mode == "recreate" and op.number < 1:
        raise WorkloadError(
            f"{where}.workloadTemplate[{index}].number: recreate mode needs at least 1 slot"
        )
    templates = tuple(
        _template(path, f"{where}.workloadTemplate[{index}].templatePaths[{j}]", relative, None)
        for j, relative in enumerate(op.template_paths)
    )
    return Churn(
        templates,
        op.namespace or f"namespace-{index}",
        op.interval_milliseconds / 1000,
        op.mode,
        op.number,
    )


def _dra(
    path: Path,
    where: str,
    ops: list[tuple[int, CreateResourceDriverOp | CreateAnyOp | AllocResourceClaimsOp]],
    params: dict[str, int | str],
) -> DraSetup:
    def param(i: int, name: str, value: str) -> int:
        key = value.removeprefix("$")
        found = params.get(key)
        if not value.startswith("$") or not isinstance(found, int):
            raise WorkloadError(
                f"{where}.workloadTemplate[{i}].{name}: {value!r} is not "
                f"$<a param of the {PERFORMANCE} workload> ({', '.join(sorted(params))})"
            )
        return found

    driver: str | None = None
    per_node = 0
    objects: list[AnyObjects] = []
    for i, op in ops:
        match op:
            case CreateResourceDriverOp():
                driver = op.driver_name
                per_node = param(i, "maxClaimsPerNodeParam", op.max_claims_per_node_param)
            case CreateAnyOp():
                field = f"{where}.workloadTemplate[{i}].templatePath"
                template = _template(path, field, op.template_path, None, named=True)
                count = None if op.count_param is None else param(i, "countParam", op.count_param)
                namespace = op.namespace or f"namespace-{i}"
                objects.append(AnyObjects(template, namespace, count))
            case AllocResourceClaimsOp():
                objects = [
                    replace(o, allocated=True)
                    if o.namespace == op.namespace and o.template.kind == "resourceclaim"
                    else o
                    for o in objects
                ]
    return DraSetup(driver, per_node, tuple(objects))


def _gangs(path: Path, where: str, index: int, op: CreatePodGroupsOp) -> Gangs:
    field = f"{where}.workloadTemplate[{index}].podGroupTemplatePath"
    template = _template(path, field, op.pod_group_template_path, "PodGroup")
    api_version = msgspec.json.decode(template.encoded).get("apiVersion", "")
    if isinstance(api_version, str) and api_version.startswith("scheduling.k8s.io/"):
        native = msgspec.json.decode(template.encoded, type=SchedulingPodGroup)
        gang = native.spec.scheduling_policy.gang
        if gang is None or gang.min_count < 1:
            raise WorkloadError(
                f"{shown(path.parent / op.pod_group_template_path)}: "
                f"spec.schedulingPolicy.gang.minCount: at least 1 member per group ({field})"
            )
        return Gangs(template, gang.min_count, native=True)
    group = msgspec.json.decode(template.encoded, type=PodGroup)
    if group.spec.min_member < 1:
        raise WorkloadError(
            f"{shown(path.parent / op.pod_group_template_path)}: spec.minMember: at least 1 "
            f"member per group ({field})"
        )
    return Gangs(template, group.spec.min_member)


def _scheduler_config(path: Path, where: str, relative: str) -> Path:
    """The test case's KubeSchedulerConfiguration, loaded once here so a broken one is
    refused before anything runs."""
    config = path.parent / relative
    try:
        load_config(config)
    except ValueError as error:  # ConfigError: names the file, the line and the field
        raise WorkloadError(f"{where}.schedulerConfigPath: {error}") from error
    return config


def _performance_params(where: str, case: TestCase) -> dict[str, int | str]:
    chosen = [(j, w) for j, w in enumerate(case.workloads) if PERFORMANCE in w.labels]
    if len(chosen) != 1:
        raise WorkloadError(
            f"{where}.workloads: exactly one workload is labelled {PERFORMANCE} "
            f"(found {len(chosen)})"
        )
    j, workload = chosen[0]
    for key, value in workload.params.items():
        duration = isinstance(value, str) and parse_duration(value) is not None
        if not duration and (type(value) is not int or value < 0):
            raise WorkloadError(
                f"{where}.workloads[{j}].params.{key}: a count (an integer >= 0) or a "
                f"duration (10s), not {value!r}"
            )
    return workload.params


def _namespace(index: int, op: CreatePodsOp) -> str:
    """The op's namespace, else upstream's ``namespace-<op index>``."""
    return op.namespace or f"namespace-{index}"


def _template(
    config: Path, where: str, relative: str, kind: str | None, *, named: bool = False
) -> Template:
    """The template at ``relative``, of ``kind`` (None: any kind ksched ingests, as a
    churn op's); ``named``: a ``metadata.name`` may stand for the ``generateName``."""
    path = config.parent / relative
    try:
        obj: Any = yaml.safe_load(path.read_text())
    except OSError as error:
        raise WorkloadError(f"{where}: cannot open {shown(path)}: {error.strerror}") from error
    except yaml.YAMLError as error:
        raise WorkloadError(f"{shown(path)}: {error}") from error
    found = obj.get("kind") if isinstance(obj, dict) else None
    if kind is None and (not isinstance(found, str) or found.lower() not in TEMPLATE_KINDS):
        raise WorkloadError(
            f"{shown(path)}: kind: {found!r} is not a kind ksched ingests "
            f"({', '.join(sorted(k.__name__ for k in TEMPLATE_KINDS.values()))}; {where})"
        )
    if kind is not None and found != kind:
        raise WorkloadError(f"{shown(path)}: kind: a {kind} template is needed here ({where})")
    assert isinstance(obj, dict) and isinstance(found, str)
    meta = obj.get("metadata")
    prefix = isinstance(meta, dict) and isinstance(meta.get("generateName"), str)
    if not prefix and not (named and isinstance(meta, dict) and isinstance(meta.get("name"), str)):
        also = "; or metadata.name, in a createNodes op of count 1" if kind == "Node" else ""
        raise WorkloadError(
            f"{shown(path)}: metadata.generateName: required (a name prefix{also}; {where})"
        )
    _check_decodes(path, obj, found)
    return Template.of(obj)


TEMPLATE_KINDS: Final = {kind: cls for kind, cls in KINDS.items() if kind != BINDING_KIND}
"""The kinds a template may be of: every kind ksched ingests (contracts.kinds)."""


def _check_decodes(path: Path, obj: dict[str, Any], kind: str) -> None:
    """The template is a valid ``kind`` for the contracts (wrong types are caught here)."""
    try:
        msgspec.json.decode(msgspec.json.encode(obj), type=TEMPLATE_KINDS[kind.lower()])
    except msgspec.ValidationError as error:
        raise WorkloadError(f"{shown(path)}: {error}") from error


__all__ = ["WORKLOADS_DIR", "WorkloadError", "load_file", "load_workloads", "workload_named"]
