"""Kubernetes helpers that the scheduler framework and the descheduler both need, once,
below both, under upstream's names: label selectors (labels: ``LabelSelectorAsSelector``,
``Parse``), taints and tolerations (taints: ``TolerationsTolerateTaint``,
``FindMatchingUntoleratedTaint``), node affinity (nodeaffinity:
``GetRequiredNodeAffinity``, ``LazyErrorNodeSelector``), a pod's QoS class (qos:
``GetPodQOS``), ``metav1.Time`` stamps as seconds (timestamps), field paths and
errors (validation) and the DRA devices a ResourceClaim's allocation holds (devices).

Not here: anything that knows the framework, a plugin or a service (these are pure
functions of Kubernetes objects); evaluating a helper over every node at once (the
plugins' columnar masks, e.g. :mod:`services.framework.plugins.helper`).
"""
