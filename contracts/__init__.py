"""ksched's wire contracts, and only them: Kubernetes API objects as msgspec Structs
(:mod:`.k8s`), what users publish and the sequenced cluster log (``events.py``:
WatchEvent, LogEntry, ClusterBatch), the internal hops (``messages.py``: ScheduleBatch,
BindBatch, ResultBatch, references not copies), the one list of kinds ksched ingests
(``kinds.py``) and every exchange, queue and binding (``topology.py``).

Not here: validation, defaults and decisions (the services'); this package imports
nothing else of ksched's (import-linter checks it).
"""
