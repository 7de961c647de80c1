"""The binder service: the binding cycle of each reserved pod (WaitOnPermit, PreBind, Bind,
PostBind), the claim on its reservation, the Permit timers of waiting pods, and one
confirmed publish of the Binding, its Scheduled Event and the results.

Not here: deciding where a pod goes (:mod:`services.scheduler`), what a PreBind or Bind
plugin does (the plugin, in :mod:`services.framework.plugins`), building the Binding and
Events users receive (:mod:`services.common.decisions`).
"""
