"""The ``ksched`` command: ``run`` (one service) and ``up`` (every service as a
process), ``publish`` and ``watch``, ``simulate`` and ``replay`` on the embedded mode
(every service in one process on the in-memory bus, store and log), ``deschedule``, the
``queue`` and ``waiting`` views, ``dead-letters`` and ``asyncapi``.

Not here: a service's logic (the CLI wires and starts services and prints what they
report), the benchmark harness (``ksched bench`` is loaded through the
``ksched.commands`` entry point).
"""
