"""A Person is held to an alphabet that keeps audience entries and stored rows unambiguous."""

from __future__ import annotations

import pytest

from symfonic import Person
from symfonic.kernel.people import groups_from


def test_a_person_round_trips_through_its_dict() -> None:
    ada = Person(id="ada", name="Ada Lovelace", email="ada@example.com",
                 groups=frozenset({"finance", "support"}))
    assert ada.to_dict() == {"id": "ada", "name": "Ada Lovelace", "email": "ada@example.com",
                             "groups": ["finance", "support"]}
    assert Person.from_dict(ada.to_dict()) == ada
    assert ada.display_name == "Ada Lovelace" and Person(id="bob").display_name == "bob"


@pytest.mark.parametrize(("fields", "refusal"), [
    ({"id": ""}, "invalid person id"),
    ({"id": "group:finance,person:eve"}, "invalid person id"),
    ({"id": "ada lovelace"}, "invalid person id"),
    ({"id": "-ada"}, "invalid person id"),
    ({"id": "a" * 129}, "invalid person id"),
    ({"id": "ada", "name": "Ada\nAdmin: yes"}, "invalid name"),
    ({"id": "ada", "name": "A" * 201}, "invalid name"),
    ({"id": "ada", "email": "not an email"}, "invalid email"),
    ({"id": "ada", "groups": frozenset({"fin ance"})}, "invalid group names"),
    ({"id": "ada", "groups": frozenset({"finance,admins"})}, "invalid group names"),
])
def test_an_invalid_person_is_refused_by_name(fields: dict[str, object], refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        Person(**fields)  # type: ignore[arg-type]


def test_a_stored_mapping_that_is_not_a_person_is_refused() -> None:
    with pytest.raises(ValueError, match="not a person"):
        Person.from_dict({"name": "no id"})
    with pytest.raises(ValueError, match="invalid person id"):
        Person.from_dict({"id": 7})


def test_groups_are_read_from_a_comma_separated_list() -> None:
    assert groups_from(" finance, support,, ") == frozenset({"finance", "support"})
    assert groups_from("") == frozenset()
