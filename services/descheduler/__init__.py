"""The descheduler (kubernetes-sigs/descheduler): DeschedulerPolicy decoding, the cycle
over profiles, the pod evictor and its limits, Ready nodes and the nodeFit check through
the scheduler framework's filters, the service. Its framework's types are
:mod:`.api`; its plugins are :mod:`.plugins`, collected in :mod:`.registry`."""
