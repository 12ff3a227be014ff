"""The composition root (``Host``) and resuming paused turns through it."""
