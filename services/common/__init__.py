"""What every service shares: the bus and store edges, the event log, settings, telemetry."""
