"""QueueSort plugins."""
