"""NodeResourcesFit and its scoring strategies.

Not here: a pod's requests and a node's allocatable as upstream counts them
(:mod:`services.common.resources`).
"""
