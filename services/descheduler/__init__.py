"""The descheduler (kubernetes-sigs/descheduler): DeschedulerPolicy decoding, the cycle over
profiles, DefaultEvictor and the pod evictor with its limits (PDBs, outstanding
evictions), Ready nodes, nodeFit through the scheduler framework's filters and the
service (lease, evictions). Its framework's types are ``api.py``; its plugins are
``plugins/``, collected in ``registry.py``.

Not here: Kubernetes helpers the scheduler needs too (:mod:`services.common.k8s`), a
scheduler plugin (nodeFit goes through the framework runtime, never a plugin module),
anything of another service.
"""
