"""ksched's wire contracts: Kubernetes-shaped msgspec Structs, internal messages and the
bus topology. This package imports nothing else of ksched's."""
