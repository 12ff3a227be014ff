"""Durability: pauses and resumes across processes, crashes, races and hosts (issues 3, 4, 5).

``workers.py`` is the program every child process runs; ``harness.py`` is the parent's side.
"""
