"""A clock tests can move."""

from __future__ import annotations


class ManualClock:
    """Epoch seconds that change only when told; pass it as ``clock=`` to a host."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
