"""Tool-argument validation against each tool's JSON Schema, with compiled validators cached.

RL renders thousands of harness variants whose ``parameters`` objects are new dicts with the
same content, so validators are cached by the schema's canonical JSON text (and, for speed, by
object identity while that object is alive).

>>> check_arguments({"type": "object", "required": ["product_id"]}, {})
"'product_id' is a required property"
>>> check_arguments({"type": "object", "required": ["product_id"]}, {"product_id": "P001"}) is None
True
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

_BY_TEXT: OrderedDict[str, Any] = OrderedDict()
_BY_ID: dict[int, tuple[Any, Any]] = {}
_MAX = 4096
_LOCK = threading.Lock()


def validator_for(schema: dict[str, Any]) -> Any:
    """A compiled jsonschema validator for ``schema`` (cached; safe across threads)."""
    hit = _BY_ID.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    text = json.dumps(schema, sort_keys=True, default=str)
    with _LOCK:
        v = _BY_TEXT.get(text)
        if v is None:
            cls = validators.validator_for(schema)
            try:
                cls.check_schema(schema)
            except SchemaError as e:
                raise ValueError(f"tool parameters are not a valid JSON Schema: {e.message}") from None
            v = cls(schema)
            _BY_TEXT[text] = v
            if len(_BY_TEXT) > _MAX:
                _BY_TEXT.popitem(last=False)
        else:
            _BY_TEXT.move_to_end(text)
        if len(_BY_ID) > _MAX:
            _BY_ID.clear()
        # Keep a reference to the schema so its id cannot be reused by another object.
        _BY_ID[id(schema)] = (schema, v)
    return v


def check_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    """``None`` when ``arguments`` satisfy ``schema``, else the first problem, in words."""
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    try:
        v = validator_for(schema or {"type": "object"})
    except ValueError as e:
        return str(e)
    error = next(iter(v.iter_errors(arguments)), None)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
