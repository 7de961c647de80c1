"""The framework runtime (upstream's ``framework/runtime`` and ``schedule_one.go``): the
:class:`~services.framework.runtime.framework.Framework` built from a profile and a
registry, and its filtering, scoring, sampling and explanation."""
