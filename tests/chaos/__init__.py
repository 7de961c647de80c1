"""The chaos run (``ops/chaos``): ksched's promise checked while things die.

A SchedulingBasic-shaped workload goes through the four services as processes, on a
RabbitMQ node and a redis-server of the run's own, while ksched services are killed with
-9 (one at a time, and two at the same moment once), RabbitMQ is restarted and Redis is
restarted empty. At the end the invariants are checked from the decisions an independent
client received, the store and the event log (:mod:`.checks`).

Modules: :mod:`.workload` (what is published), :mod:`.client` (the user, plain aio-pika),
:mod:`.faults` (what is done to the run), :mod:`.checks` (what must hold), :mod:`.run`
(the whole run, bounded), ``__main__`` (the command line).
"""
