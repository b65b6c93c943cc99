"""The on-screen product: whether a model's first product lookup names the product the viewer sees.

A viewer asking about "this one" needs the id the overlay shows (``[on screen: Honey Granola
(P013)]``) copied into the tool call. A model that recalls ids instead of reading them looks up some
other product, and every fact after that is wrong however well it follows the harness: the score
falls for a reason that no skill rule or tool rename explains. Counted over the episodes whose
answer key looks the on-screen product up, so that "the other one" and order questions do not count
against it.

>>> record = {"tool_steps": [{"name": "load_skill", "arguments": {"name": "explain_price"}},
...                          {"name": "get_product_details", "arguments": {"product_id": "P003"}}]}
>>> first_product_id(record)
'P003'
"""

from __future__ import annotations

import re
from typing import Any

#: The catalog's product ids (``P001``...): a value of this shape in a call's arguments is a lookup.
PRODUCT_ID = re.compile(r"^P\d{3}$")


def first_product_id(record: dict[str, Any]) -> str | None:
    """The first product id the model passed to any tool in an episode record (None: it never did);
    read from the record's tool steps, whose arguments the runtime has parsed (None when unreadable)."""
    for step in record.get("tool_steps") or []:
        args = step.get("arguments")
        for value in args.values() if isinstance(args, dict) else ():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and PRODUCT_ID.match(v):
                    return v
    return None


def looks_up_on_screen_product(case: Any) -> bool:
    """Whether the case's answer key calls a tool with the product on screen."""
    context, expect = getattr(case, "context", None), getattr(case, "expect", None)
    pid = getattr(context, "product_id", None)
    if not pid or expect is None:
        return False
    for call in expect.calls:
        for value in call.args.values():
            if value == pid or (isinstance(value, list) and pid in value):
                return True
    return False


def on_screen_product_use(results: list[Any], items: dict[tuple[str, str], Any]) -> dict[str, int]:
    """Of the ``episodes`` whose answer key looks up the on-screen product, how many looked any
    product up (``lookups``) and how many named the on-screen one in their first lookup (``named``).

    >>> on_screen_product_use(store.results(), load_run_items(run, "evals", {"livestream"}))  # doctest: +SKIP
    {'episodes': 31, 'lookups': 28, 'named': 4}
    """
    episodes = lookups = named = 0
    for r in results:
        item = items.get((r.suite, r.case_id))
        case = getattr(item, "case", None)
        if case is None or not looks_up_on_screen_product(case):
            continue
        episodes += 1
        pid = first_product_id(r.record or {})
        lookups += pid is not None
        named += pid == case.context.product_id
    return {"episodes": episodes, "lookups": lookups, "named": named}
