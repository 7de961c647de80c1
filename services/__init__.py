"""ksched's five services (informer, queue, scheduler, binder, descheduler: each a package
that ``ksched run NAME`` starts), what they share (:mod:`.common`, :mod:`.framework`) and
the ``ksched`` command (:mod:`.cli`).

Not here: wire types (:mod:`contracts`), the benchmark harness (:mod:`bench`). A service
never imports another (import-linter checks it): what two need goes down into common/ or
framework/.
"""
