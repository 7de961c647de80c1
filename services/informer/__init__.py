"""The informer service: what users publish is validated, reconciled with the objects it
knows, sequenced, appended to the event log, projected and republished on
ksched.cluster.

Not here: the log's storage (:mod:`services.common.eventlog`), queueing or scheduling
(:mod:`services.queue`, :mod:`services.scheduler`).
"""
