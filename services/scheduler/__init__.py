"""The scheduler service: the scheduling cycle, run against a columnar snapshot."""
