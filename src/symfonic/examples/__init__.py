"""Example agents shipped with symfonic, used by ``symfonic demo`` and ``symfonic serve``."""
