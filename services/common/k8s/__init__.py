"""Kubernetes helpers that the scheduler framework and the descheduler both need, once,
below both, under upstream's names: label selectors (``apimachinery/pkg/labels``),
taints and tolerations, node affinity (``component-helpers/scheduling/corev1``) and a
pod's QoS class (``GetPodQOS``). Pure functions of Kubernetes objects: nothing here
knows the framework, a plugin or a service."""
