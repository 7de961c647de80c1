"""The ``ksched`` command: ``run`` (one service) and ``up`` (every service as a
process), ``publish`` and ``watch``, ``simulate`` and ``replay`` on the embedded mode
(every service in one process on the in-memory bus, store and log), the what-if
commands ``capacity``, ``compare`` and ``deschedule`` on the same mode, ``snapshot`` of
what the running services hold, the ``queue``, ``waiting`` and ``leases`` views,
``log copy``, ``dead-letters`` and ``asyncapi``.

Not here: a service's logic (the CLI wires and starts services and prints what they
report), the benchmark harness (``ksched bench`` is loaded through the
``ksched.commands`` entry point).
"""
