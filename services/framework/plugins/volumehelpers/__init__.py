"""What the volume plugins share, as upstream's ``component-helpers/storage/volume``:
claim and class lookups with the API's NotFound texts (:mod:`.claims`) and node
selectors evaluated over every node at once (:mod:`.nodeselector`)."""
