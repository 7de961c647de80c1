"""The framework's API (upstream's ``pkg/scheduler/framework``): the extension-point
Protocols and CycleState, Status, PodInfo/QueuedPodInfo, cluster events, Diagnosis and
FitError, the listers plugins read, and the registry types a plugin registers with."""
