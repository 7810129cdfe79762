"""Execution: worker processes with timeouts, and the tuning loop that drives a strategy."""
