"""This week's edit of the live-commerce harness, as the live-ops team would make it.

`harnessctl edit` proposes edits from a run's failures; a business edit decided by people is
written here instead, in the same patch language (harnessctl.loop.edits): operations on elements
addressed by stable key. The harness is rewritten in place, keeping its comments and layout, and
validated before anything is written.

    python scripts/weekly_edit.py out/demo/harness
"""

from __future__ import annotations

import sys

from harnessctl.harness import load_harness
from harnessctl.harness.save import save_harness
from harnessctl.loop.edits import apply_edit

WEEKLY_EDIT = [
    # the deals tool and the pricing skill get the names the new overlay uses
    {"op": "set", "element": "tool", "key": "promotions", "field": "name", "value": "find_deals"},
    {"op": "set", "element": "skill", "key": "price_promo", "field": "name", "value": "price_and_deals"},
    # a rule reworded after viewers asked which coupon to use
    {
        "op": "set",
        "element": "rule",
        "parent": "price_promo",
        "key": "check_deals",
        "value": "Look up the deals with {{ tool.promotions }} and name the single best coupon, with its code.",
        "field": "text",
    },
    # the overlay shrank: replies get shorter, and the reply-length block now comes right after the persona
    {"op": "set", "element": "constraint", "key": "max_reply_chars", "field": "value", "value": 100},
    {"op": "move", "element": "prompt_block", "key": "reply_style", "to": 2},
]


def main(folder: str) -> None:
    edited = apply_edit(load_harness(folder), WEEKLY_EDIT)
    save_harness(edited, folder, base=folder)
    print(
        f"{folder}: {len(WEEKLY_EDIT)} edits applied (tool, skill renamed; rule reworded; max_reply_chars 120 -> 100, stated second)"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/demo/harness")
