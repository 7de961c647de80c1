"""A local high-availability deployment of ksched on one machine (``ops/ha/up``).

A 3-node RabbitMQ cluster (:mod:`.rabbit_cluster`), Redis with one replica and three
Sentinels (:mod:`.redis_sentinel`) and two replicas of every ksched service
(:mod:`.services`), each a process of its own under a work directory, started and kept
running by one supervisor process (:mod:`.deployment`); ``ops/ha/down`` stops it all and
removes the work directory. The chaos run's HA mode (``ops/chaos --ha``) drives the same
classes in-process. The machine's own RabbitMQ (5672) and Redis (6379) are never touched:
every server here has ports, node names, data and an Erlang port mapper of its own.
"""
