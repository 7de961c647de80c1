"""The descheduler's in-tree plugins, one module each, named after upstream's: each class
subclasses the Protocols of its points (DeschedulePlugin, BalancePlugin, EvictorPlugin)
and each module declares its ``ENTRY``; :mod:`.base` holds the pod selection and the
eviction step they share.

Not here: the evictor, its limits and nodeFit (the descheduler's ``evictions.py`` and
``nodefit.py``), the policy and registry (``policy.py``, ``registry.py``),
Kubernetes helpers (:mod:`services.common.k8s`).
"""
