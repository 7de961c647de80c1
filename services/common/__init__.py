"""What every service and the framework share, strictly below the framework (import-linter
checks it): the bus and store edges, the event log and its projection
(``projection.py``: ksched.cluster followed in sequence order, reloaded on a gap),
settings (``settings.py``: one typed group per service, loaded once at the edge), the
clock, logs, metrics and telemetry, the Binding and v1 Events users receive
(``decisions.py``), pod requests and node allocatable as upstream counts them
(``resources.py``) and the Kubernetes helpers scheduler and descheduler both need
(:mod:`.k8s`).

Not here: anything that knows the scheduling framework, a plugin or a service; what only
one service needs (it stays in that service).
"""
