"""Helpers shared by the in-tree plugins (upstream's ``plugins/helper`` and the
toleration rules of ``component-helpers/scheduling/corev1``)."""
