"""The stores' JSON (orjson to write, msgspec to read) holds the values the standard library's
JSON holds: what either fast library would read or write differently goes to the standard one."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symfonic.stores import sql
from symfonic.stores.json_text import dump_json, load_json


def standard(value: Any) -> str:
    """The standard encoder's text: equal texts mean equal values, NaN and -0.0 included."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.text()
           | st.sampled_from([2 ** 64, -(2 ** 63) - 1, 2 ** 70 + 1, 1e-7, 1e22, -0.0, "\x7f",
                              "\ud800", "é", "null", math.inf]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


@settings(max_examples=400)
@given(values)
def test_what_is_written_reads_back_as_the_standard_library_would(value: Any) -> None:
    written = dump_json(value)
    assert standard(load_json(written)) == standard(json.loads(standard(value)))
    assert standard(json.loads(written)) == standard(value)  # and any JSON reader agrees


@settings(max_examples=400)
@given(values)
def test_reading_standard_text_gives_the_standard_value(value: Any) -> None:
    text = standard(value)
    read = load_json(text)
    assert standard(read) == text
    assert type(read) is type(json.loads(text))


def test_values_orjson_would_change_are_written_by_the_standard_encoder() -> None:
    # orjson would write NaN and Infinity as null, and refuses the rest.
    for value in ({"x": math.nan}, {"x": -math.inf}, {"n": 2 ** 64}, {1: "a"}, {"s": "\ud800"}):
        assert dump_json(value) == standard(value)
    assert dump_json({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'  # sorted, compact


def test_text_the_fast_reader_refuses_is_read_by_the_standard_parser() -> None:
    assert math.isnan(load_json('{"x": NaN}')["x"])
    assert load_json('{"x": 1e400}')["x"] == math.inf
    assert load_json('"\\ud800"') == "\ud800"
    big = load_json('{"n": 1180591620717411303425}')["n"]
    assert type(big) is int and big == 2 ** 70 + 1


def test_what_the_standard_library_refuses_is_refused() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (Point(1), datetime.date(2026, 1, 1), {"s": {1, 2}}, {"a": object()}):
        with pytest.raises(TypeError):
            standard(value)
        with pytest.raises(TypeError):
            dump_json(value)
    for text in ("", "not json", '{"a":1}x', "[1,]"):
        with pytest.raises(ValueError):
            json.loads(text)
        with pytest.raises(ValueError):
            load_json(text)


def test_one_contract_stored_as_two_texts_is_one_group() -> None:
    """Rows written by the standard encoder (non-ASCII escaped) before, and orjson's after."""
    schema = {"properties": {"choix": {"description": "été"}}, "type": "object"}
    before, after = standard(schema), dump_json(schema)
    assert before != after and json.loads(before) == json.loads(after)
    rows = [("agent@1", "approve", "approval", before, None, 2),
            ("agent@1", "approve", "approval", after, None, 3),
            ("agent@1", "other", "approval", after, None, 1)]
    groups = sql.contracts_of(rows)
    assert sorted((g.name, g.count) for g in groups) == [("approve", 5), ("other", 1)]
    assert groups[0].answer_schema == schema
