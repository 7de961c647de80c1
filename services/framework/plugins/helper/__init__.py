"""Helpers shared by the in-tree plugins (upstream's ``plugins/helper``): score
normalization, integer division as Go rounds it, and taints over every node at once.

Not here: what the descheduler needs too, such as the per-taint rules
(:mod:`services.common.k8s.taints`); one plugin's own helpers (beside it).
"""
