"""QueueSort plugins.

Not here: the queue that sorts with them (:mod:`services.queue`).
"""
