"""Named subschemas of several schemas put side by side in one grammar."""

from __future__ import annotations

import jsonschema
import pytest

from parlay.engine.contract.constrain import at_root, distinct

TREE = {
    "type": "object",
    "properties": {"label": {"type": "string"}, "kids": {"$ref": "#/$defs/Node/properties/all"}},
    "$defs": {
        "Node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "all": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["label"],
        }
    },
}
COUNTER = {
    "type": "object",
    "properties": {"n": {"$ref": "#/$defs/Node"}},
    "required": ["n"],
    "$defs": {"Node": {"type": "integer"}},
}


def test_a_later_schemas_clashing_name_is_renamed_with_every_reference_into_it() -> None:
    first, second = distinct([COUNTER, TREE])
    assert first is COUNTER
    assert set(second["$defs"]) == {"Node_2"}
    node = second["$defs"]["Node_2"]
    assert node["properties"]["all"]["items"] == {"$ref": "#/$defs/Node_2"}  # recursive
    assert second["properties"]["kids"] == {"$ref": "#/$defs/Node_2/properties/all"}
    grammar = at_root([first, second], [])
    jsonschema.validate({"label": "a", "kids": [{"label": "b", "all": [{"label": "c"}]}]}, grammar)
    jsonschema.validate({"n": 3}, grammar)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"label": "a", "kids": [{"all": []}]}, grammar)


def test_a_renamed_subschema_avoids_names_already_used() -> None:
    third = {"$defs": {"Node": {"type": "string"}, "Node_2": {"type": "null"}}}
    renamed = distinct([COUNTER, TREE, third])[2]
    assert set(renamed["$defs"]) == {"Node_3", "Node_2_2"}
