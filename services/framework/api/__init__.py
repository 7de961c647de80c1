"""The framework's API (upstream's ``pkg/scheduler/framework``): the extension-point
Protocols and CycleState, Status, PodInfo/QueuedPodInfo, cluster events, Diagnosis and
FitError, the listers plugins read, and the registry types a plugin registers with.

Not here: implementations (running plugins is :mod:`..runtime`, the Cache and Snapshot
are :mod:`..cache`, every plugin is in :mod:`..plugins`); api imports nothing else of the
framework (the Snapshot it names in signatures is imported for annotations only).
"""
