"""What the volume plugins share, as upstream's ``component-helpers/storage/volume``:
claim and class lookups with the API's NotFound texts (:mod:`.claims`) and node
selectors evaluated over every node at once (:mod:`.nodeselector`).

Not here: a volume plugin itself (its own module), node-selector terms and their
per-node rules (:mod:`services.common.k8s.nodeaffinity`).
"""
