"""The ``ksched`` command: ``ksched run NAME`` for each service, embedded mode (every
service in one process on the memory bus and store), simulate, replay, explain,
deschedule, the queue view, waiting pods and the dead letters.

Not here: a service's logic (the CLI wires and starts services and prints what they
report), the benchmark harness (``ksched bench`` is loaded through the
``ksched.commands`` entry point).
"""
