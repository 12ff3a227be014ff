"""Audience entries: ``person:ID`` and ``group:NAME``, checked and put in a stable order.

Apart from :mod:`.audience` so that everything that names people (who may answer, whom an
escalation reaches) reads entries one way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["audience_of"]

_ENTRY = re.compile(r"^(person|group):([A-Za-z0-9][A-Za-z0-9._:@+-]{0,127})$")


def audience_of(entries: Iterable[str]) -> tuple[str, ...]:
    """Entries checked and put in a stable order (deduplicated, sorted).

    Raises:
        ValueError: an entry that is not ``person:ID`` or ``group:NAME`` in the people alphabet.
    """
    checked: set[str] = set()
    for entry in entries:
        if not isinstance(entry, str) or not _ENTRY.match(entry):
            raise ValueError(f"invalid audience entry {entry!r}: use 'person:ID' or 'group:NAME'")
        checked.add(entry)
    return tuple(sorted(checked))
