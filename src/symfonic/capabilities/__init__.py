"""Capabilities: what an agent can do beyond calling its own tools."""
