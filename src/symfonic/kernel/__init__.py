"""The turn loop.

Nothing in this package knows about people, tokens or databases: it runs rounds of model calls and
tool calls, lets capabilities put stages in front of tool execution, and reports what happened as
events. Everything durable is layered on top through the seams defined here.
"""
