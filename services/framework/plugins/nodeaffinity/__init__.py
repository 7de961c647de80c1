"""NodeAffinity: ``spec.nodeSelector``, required and preferred node affinity, and the
scheduler-enforced ``addedAffinity`` (see :mod:`.node_affinity`).

Not here: node-selector parsing and the per-node rules the descheduler shares
(:mod:`services.common.k8s.nodeaffinity`).
"""
