"""DynamicResources: Dynamic Resource Allocation (``resource.k8s.io/v1``) in the
scheduler, as upstream's ``plugins/dynamicresources`` with the structured-parameters
allocator (:mod:`.allocator`)."""
