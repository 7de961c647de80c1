"""PodTopologySpread: spread matching pods evenly over topology domains.

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

**Default constraints and their selector (a deliberate approximation).** A pod without
constraints gets the args' default constraints (System: hostname maxSkew 3 and zone
maxSkew 5, both ScheduleAnyway; or the List given). Upstream applies them with a
selector merged from the Services, ReplicationControllers, ReplicaSets and StatefulSets
that select the pod (``helper.DefaultSelector``), and applies none when that selector is
empty. ksched does not ingest those kinds, so the default selector here is "pods with
the same controller": if the pod's controller owner reference is a ReplicationController
(v1), ReplicaSet or StatefulSet (apps/v1) — the kinds upstream consults — the selector
counts the pods (of the same namespace) whose controller is that same object (kind,
name, uid); otherwise the pod gets no default constraints. This matches upstream
whenever the controller's selector selects exactly its own pods and Services only
narrow it (their selectors are ANDed with the controller's), which is the usual case.
It differs for pods selected by a Service but owned by no such controller (upstream
spreads them by the Service's selector; ksched does not spread them) and for
controllers whose selector also matches other pods.
"""

from services.framework.plugins.podtopologyspread.args import PodTopologySpreadArgs
from services.framework.plugins.podtopologyspread.common import NAME
from services.framework.plugins.podtopologyspread.plugin import PodTopologySpread, new
from services.framework.registry import PluginEntry

ENTRY = PluginEntry(NAME, PodTopologySpread, new, PodTopologySpreadArgs)
"""The registry entry: ``{**in_tree_registry(), ENTRY.name: ENTRY}``."""

__all__ = ["ENTRY", "NAME", "PodTopologySpread", "PodTopologySpreadArgs", "new"]
