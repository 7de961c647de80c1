"""Helpers shared by the in-tree plugins (upstream's ``plugins/helper``): score
normalization, integer division as Go rounds it, and taints over every node at once
(the per-taint rules are :mod:`services.common.k8s.taints`)."""
