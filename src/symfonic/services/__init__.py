"""Conversation services: the ports every store adapter implements."""
