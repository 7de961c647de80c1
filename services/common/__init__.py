"""What every service and the framework share, strictly below the framework (import-linter
checks it): the bus and store edges, the event log and its projection, settings,
telemetry, decisions, pod and node resources (:mod:`.resources`) and the Kubernetes
helpers scheduler and descheduler both need (:mod:`.k8s`). Nothing here knows the
scheduling framework, a plugin or a service."""
