"""The JSON text the SQL stores write and read: the standard library's values, made faster.

A pause + resume encodes about a dozen JSON cells (the pause's row, its turn state, the claim's
decision, the outcome, the transcript's segments) and decodes about ten. Through the standard
``json`` module that was about 120 us of a SQLite cycle's 1.9 ms; with orjson writing and
msgspec reading, the cycle took 85 us less (docs/design-notes.md).

Neither library is a drop-in replacement, so each is used only where its value is the standard
library's, and the standard library answers everything else:

- **Writing.** orjson writes ``NaN`` and ``Infinity`` as ``null``, where the standard encoder
  keeps them; any ``null`` in orjson's text therefore sends the value to the standard encoder,
  so a non-finite float is stored as it always was. What orjson refuses (integers past 64 bits,
  keys that are not strings, lone surrogates, dataclasses and datetimes, which the standard
  encoder refuses too) goes to the standard encoder, which stores it or raises its own error.
  The text may differ from the standard encoder's (non-ASCII characters written as UTF-8 rather
  than escaped, ``1e-07`` written ``1e-7``); the value read back is the same. One leniency
  remains: orjson writes a UUID or an enum member as its text or value, where the standard
  encoder refused them.
- **Reading.** msgspec keeps integers of any size (orjson turns those past 64 bits into floats)
  and refuses ``NaN``, ``Infinity``, numbers out of a float's range and lone surrogates; each of
  those is read again by the standard parser, which reads them as it always did.

Nothing here may be used where the text itself is compared or signed: the audit chain's digests
and the tokens keep their canonical standard-library encoding.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson

_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_DECODER = msgspec.json.Decoder()


def dump_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys, read back as the standard encoder's would be.

    Raises:
        TypeError, ValueError: what the standard encoder raises for ``value``.
    """
    try:
        text = orjson.dumps(value, option=_SORTED)
    except orjson.JSONEncodeError:
        return _standard(value)
    if b"null" in text:  # None, or a non-finite float orjson would have lost
        return _standard(value)
    return text.decode()


def load_json(text: str | bytes) -> Any:
    """The value of the JSON ``text``, exactly as ``json.loads`` reads it.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON, not even to the standard parser.
    """
    try:
        return _DECODER.decode(text)
    except msgspec.MsgspecError:
        return json.loads(text)


def _standard(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
