"""DefaultPreemption: only its args so far, so that configurations tuning preemption
load; the PostFilter plugin itself arrives with the preemption issue."""
