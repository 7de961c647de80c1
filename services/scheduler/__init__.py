"""The scheduler service: the scheduling cycle over the Cache and a columnar Snapshot,
batched assume in the store, and what it sends on to the binder and back to the queue.

Not here: the plugins and the runtime that runs them (:mod:`services.framework`),
binding (:mod:`services.binder`), queueing (:mod:`services.queue`).
"""
