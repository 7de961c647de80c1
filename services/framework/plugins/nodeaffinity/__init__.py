"""NodeAffinity: ``spec.nodeSelector``, required and preferred node affinity, and the
scheduler-enforced ``addedAffinity`` (see :mod:`.node_affinity`)."""
