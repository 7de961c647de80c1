"""InterPodAffinity (upstream ``plugins/interpodaffinity``): required and preferred pod
affinity and anti-affinity, for the incoming pod and, symmetrically, for the pods
already running.

Not here: label selectors (:mod:`services.common.k8s.labels`).
"""

from services.framework.plugins.interpodaffinity.args import InterPodAffinityArgs
from services.framework.plugins.interpodaffinity.plugin import ENTRY, NAME, InterPodAffinity, new

__all__ = ["ENTRY", "NAME", "InterPodAffinity", "InterPodAffinityArgs", "new"]
