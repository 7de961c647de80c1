"""The framework runtime (upstream's ``framework/runtime`` and ``schedule_one.go``): the
:class:`~services.framework.runtime.framework.Framework` built from a profile and a
registry, its filtering, scoring, sampling and explanation, and the waiting-pods map
shared through the store (``waiting_pods.py``).

Not here: a plugin's logic (:mod:`..plugins`), the cluster's state (:mod:`..cache`), the
scheduler service's loop and messages (:mod:`services.scheduler`).
"""
