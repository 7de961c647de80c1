"""The queue service: kube-scheduler's scheduling queue (``PriorityQueue``: activeQ,
backoffQ, unschedulablePods, gated pods) over the bus, its queueing hints and
credit-bounded dispatch.

Not here: the scheduling cycle (:mod:`services.scheduler`), what a plugin's queueing hint
decides (the plugin declares it; ``hints`` only evaluates it).

- ``scheduling_queue``: the core, no I/O (activeQ, backoffQ, unschedulablePods, gated
  pods, attempts in flight), with its state machine; ``heap``, ``backoff_queue``,
  ``unschedulable_pods`` and ``in_flight`` are its parts.
- ``changes``: what a pod or node update means (upstream's ActionTypes), event matching
  and labels; ``hints``: queueing-hint evaluation; ``profiles``: what the queue takes
  from each scheduling profile.
- ``eventhandlers``: log entries → queue calls, keeping the old objects the hints need;
  ``priority``: a pod's priority from its PriorityClass.
- ``nominator``: nominatedNodeName → the store's nominations.
- ``service``: the bus service (dispatch with bounded credit, results, timers, resync);
  ``metrics`` and ``view``: what it shows of itself. ``bench``: the core's raw speed.
"""
