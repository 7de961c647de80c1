"""PodTopologySpread: spread matching pods evenly over topology domains.

Not here: label selectors (:mod:`services.common.k8s.labels`) and the descheduler's
RemovePodsViolatingTopologySpreadConstraint (:mod:`services.descheduler.plugins.topologyspread`).

Upstream's plugin (``pkg/scheduler/framework/plugins/podtopologyspread``), with its
extension points, reasons and arithmetic:

- PreFilter / Filter / AddPod / RemovePod (:mod:`.filtering`): ``DoNotSchedule``
  constraints; a node fails with "node(s) didn't match pod topology spread
  constraints" when placing the pod there would exceed ``maxSkew``, and with
  "... (missing required label)" (UnschedulableAndUnresolvable) when it lacks a
  topology key. PreFilter returns Skip when the pod has no such constraint.
- PreScore / Score / NormalizeScore (:mod:`.scoring`): ``ScheduleAnyway`` constraints,
  weighted ``log(domains + 2)``, fewer matching pods scoring higher.
- Queueing hints for pod and node events (:mod:`.hints`).

Counting is columnar: a topology domain is a code of the node label column, the pods a
selector counts are kept per node by :class:`~.podindex.PodIndex` across cycles, and
per-domain counts are a ``bincount`` over nodes; no per-node Python loop per cycle.

**Default constraints.** A pod without constraints gets the args' default constraints
(System: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway; or the List given)
with upstream's default selector (``helper.DefaultSelector``,
:func:`~.selector.default_selector`): the selectors of the Services selecting the pod,
plus the selector of its ReplicationController, ReplicaSet or StatefulSet, read from
the listers; a pod whose default selector is empty gets no default constraints.
"""

from services.framework.api.registry import PluginEntry
from services.framework.plugins.podtopologyspread.args import PodTopologySpreadArgs
from services.framework.plugins.podtopologyspread.common import NAME
from services.framework.plugins.podtopologyspread.plugin import PodTopologySpread, new

ENTRY = PluginEntry(NAME, PodTopologySpread, new, PodTopologySpreadArgs)
"""The registry entry: ``{**in_tree_registry(), ENTRY.name: ENTRY}``."""

__all__ = ["ENTRY", "NAME", "PodTopologySpread", "PodTopologySpreadArgs", "new"]
