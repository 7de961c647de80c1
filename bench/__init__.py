"""The benchmark harness of ``ksched bench``, outside the services it measures; workloads
in ``ops/bench/workloads``.

Not here: anything a service needs at run time (no service imports the harness; the CLI
loads it through the ``ksched.commands`` entry point).

- :mod:`bench.command`: the ``ksched bench`` command (the CLI loads it through the
  ``ksched.commands`` entry point group; no service imports the harness).
- :mod:`bench.config`: the declarative workloads of ``ops/bench/workloads``, in upstream
  scheduler_perf's shape, strictly decoded; :mod:`bench.workload`: what a test case
  becomes (nodes, init pods, measured pods, churn).
- :mod:`bench.cycle`, :mod:`bench.embedded`, :mod:`bench.services`: the three modes;
  :mod:`bench.churn`: upstream's ``churn`` op; :mod:`bench.report`: the JSON line;
  :mod:`bench.scrape`: the service processes' ``/readyz`` and counters (messages per
  pod, conflicts, the cycle's CPU); :mod:`bench.cpu`: CPU per pod by process;
  :mod:`bench.passthrough`: the Passthrough ceiling's service.
- :mod:`bench.matrix`: the issue-14 matrix as a Markdown table (``ops/bench/matrix.py``).
- :mod:`bench.queue_ops`: ``ksched bench QueueOps``, the queue core's raw speed.
"""
