"""What viewers write: message templates per intent (and sub-kind), handles, pointers, emoji.

Templates are split between training data and the evaluation suites by a salted hash
(:func:`template_split`), as the harness vocabulary is: ``generate_cases(..., messages="train")``
draws only training templates, ``messages="eval"`` only held-out ones, so no suite message is a
training message and no (template, product) pair is shared.

>>> sorted({template_split(k, t) for k, ts in TEMPLATES.items() for t in ts})
['eval', 'train']
>>> all(templates_for(k, "train") and templates_for(k, "eval") for k in TEMPLATES)
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

# -- templates -------------------------------------------------------------------------------
# {this}: a way to point at the product on screen; {name}: the target's name; {other}: the
# other product of a comparison; {variant}, {region}, {city}, {order}, {height} from the slots.
TEMPLATES: dict[str, list[str]] = {
    "greeting": [
        "hi Mia!! 👋",
        "hello from {city}!",
        "hey hey, just joined",
        "good evening everyone ✨",
        "love this stream 😍",
        "thank u Mia!",
        "first time here, hi",
        "hello hello 💕",
        "hi hi everyone 👋",
        "hey Mia, just tuned in",
        "good morning from {city}!",
    ],
    "product_info": [
        "what is {this} made of?",
        "tell me about {this}",
        "can u tell me more abt {this} pls",
        "what does {name} do?",
        "details on {this}?",
        "describe {this} for me",
        "what's special about {this}",
        "what are the features of {name}?",
        "tell me more about {this} pls",
        "details for {this} please",
    ],
    "product_info_search": [
        "tell me about the {name}",
        "do you have the {name}? tell me more",
        "what is the {name} like?",
        "describe the {name} pls",
        "tell me about the {name} pls",
        "what is the {name}? tell me more",
        "describe the {name} for me",
    ],
    "price": [
        "how much is {this}?",
        "price?? 😭",
        "hw much for {this}",
        "what's the price of {name}",
        "how much does {this} cost",
        "price pls",
        "is {this} expensive?",
        "how much for {name}?",
        "what's the price on {this}",
        "price for {this} pls",
    ],
    "promotion": [
        "any coupon for {this}?",
        "is there a discount code?",
        "any deals on {name} today?",
        "promo code pls 🙏",
        "do u have a voucher for {this}",
        "what discounts r there for {this}",
        "any discount on {name}?",
        "got a promo code for {this}?",
        "any coupons today? 🙏",
    ],
    "stock_variant": [
        "is {variant} still in stock?",
        "any {variant} left?",
        "do u still have {this} in {variant}",
        "available in {variant}?",
        "stock check pls: {variant}",
        "is the {variant} one sold out?",
        "is {variant} available??",
        "any {variant} still in stock",
        "do u still have {variant}?",
    ],
    "stock": [
        "is {this} sold out?",
        "how many left??",
        "still in stock?",
        "is {this} available?",
        "any stock left of {name}",
        "still available?",
        "any {name} left in stock?",
        "is it sold out already",
    ],
    "size_advice": [
        "I'm {height}cm, which size?",
        "what size should I get, I'm {height} cm",
        "{height}cm tall, what size fits me?",
        "does {this} fit big? I'm {height}cm",
        "size for {height} cm pls",
        "which size for {height}cm?",
        "im {height} cm, what size?",
        "{height}cm here, which size pls",
    ],
    "shipping_region": [
        "how long to ship to {region}?",
        "delivery to {city}?",
        "when will it arrive if I'm in {city}",
        "shipping fee to {region}?",
        "do u ship to {city} 🚚",
        "how many days to deliver to {region}",
        "how long does shipping to {city} take?",
        "how fast can u deliver to {region}?",
        "delivery fee to {city}?",
    ],
    "shipping": [
        "how long does shipping take?",
        "how much is delivery?",
        "when would it arrive?",
        "shipping cost pls",
        "how long is shipping?",
        "how fast is delivery",
        "what's the delivery fee?",
    ],
    "returns": [
        "can I return {this}?",
        "what's the return policy",
        "refund if it doesn't work out?",
        "how many days to return?",
        "can i exchange it later",
        "return window for {name}?",
        "return policy for {this}?",
        "can i return it if it doesnt fit",
        "how long is the refund window?",
    ],
    "order_status": [
        "where is my order {order}?",
        "order {order} status?",
        "track {order} pls",
        "when does my order {order} arrive",
        "any update on {order}?? 📦",
        "status of {order} pls",
        "track order {order}?",
        "where is {order} now",
    ],
    "order_status_no_number": [
        "where's my order??",
        "I ordered last week, when will my order come?",
        "can u track my order",
        "where is my order, it's been ages",
        "can you track my order pls",
        "when will my order arrive??",
    ],
    "comparison": [
        "{name} vs {other}?",
        "which is better, {name} or {other}?",
        "difference between {name} and {other}?",
        "should I get {this} or the {other}?",
        "compare {this} with {other} pls",
        "between {name} and {other}, which is better?",
        "what's the difference, {name} vs {other}",
    ],
    "compliance_sensitive": [
        "will {this} cure my {condition}?",
        "is {this} safe when pregnant?",
        "can {name} treat {condition}?",
        "does it help with my {condition}?",
        "is {this} a medicine?",
        "I have {condition}, is {this} ok for me?",
        "can {this} cure {condition}?",
        "will {name} treat my {condition}?",
    ],
    "complaint_damaged": [
        "my order {order} arrived broken 😡",
        "{order} is damaged!!",
        "item missing from my package, order {order}",
        "the one I got is leaking, order {order}, so angry",
        "terrible, my parcel never came",
        "order {order} came damaged 😭",
        "my order {order} arrived cracked",
    ],
    "complaint": [
        "not happy, the colour looks different from the stream",
        "disappointed, nobody answered my question yesterday",
        "this is the worst service, so slow",
        "so disappointed with my last order",
        "terrible experience honestly",
        "not happy with how slow this is",
    ],
    "off_topic": [
        "what's the weather like there?",
        "who will win the game tonight?",
        "how old are you Mia?",
        "what's your phone number?",
        "do u like pizza",
        "what do you think about the election",
        "what music is playing?",
        "where are you streaming from",
        "do you have pets?",
    ],
    "human_request": [
        "can I talk to a real person?",
        "I want to speak to a human",
        "get me customer service pls",
        "is there an agent I can chat with?",
        "connect me to staff",
        "can a human help me?",
        "I need to talk to someone real",
        "customer service please",
    ],
    "flash_sale": [
        "when does the flash sale end?",
        "how long is the flash deal on {this}?",
        "flash price for {this}??",
        "is the countdown deal still on?",
        "how many left in the flash sale ⚡",
        "is the flash deal still going?",
        "flash sale on {this}?",
        "how long does the flash price last",
    ],
}

HANDLES = (
    "@lily_b",
    "@kim88",
    "@mo.shops",
    "@jay_k",
    "@ana.rose",
    "@tom_t",
    "@sara_l",
    "@dev_p",
    "@mimi22",
    "@leo.fit",
    "@nina_w",
    "@ben_c",
    "@yuki_m",
    "@raj99",
    "@zoe.q",
    "@omar_s",
    "@ivy_h",
    "@max_r",
    "@chloe.d",
    "@sam_e",
    "@priya_v",
    "@luca_b",
    "@emma.g",
    "@noah_f",
    "@hana_y",
    "@eli.k",
    "@ruby_x",
)
POINTERS = ("this", "this one", "the one on screen", "it")
CONDITIONS = ("acne", "eczema", "allergies", "insomnia", "joint pain")
EMOJI = ("😍", "🙏", "✨", "💕", "🔥", "😊")

#: Salt of the message split (change it and every suite must be rebuilt).
MESSAGE_SALT = "harnessctl-messages-v1"
#: Share of each kind's templates held out for the suites.
EVAL_SHARE = 0.5
MESSAGE_SPLITS = ("train", "eval", "all")


def _hash01(key: str, template: str) -> float:
    digest = hashlib.sha256(f"{MESSAGE_SALT}|{key}|{template}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def template_split(key: str, template: str) -> str:
    """``"eval"`` or ``"train"``: which side a template of ``TEMPLATES[key]`` belongs to. By
    salted hash, except that each side keeps at least one template of every kind (the one
    nearest the cut moves)."""
    ranked = sorted(TEMPLATES[key], key=lambda t: _hash01(key, t))
    n_eval = sum(1 for t in ranked if _hash01(key, t) < EVAL_SHARE)
    n_eval = min(max(n_eval, 1), len(ranked) - 1)
    return "eval" if ranked.index(template) < n_eval else "train"


def template_id(key: str, template: str) -> str:
    """A short stable name for a template: ``"price:1a2b3c4d"``."""
    return f"{key}:{hashlib.sha256(template.encode()).hexdigest()[:8]}"


def message_overlap(train: Iterable[Any], held_out: Iterable[Any]) -> dict[str, Any]:
    """How much of the held-out cases' viewer messages training data already holds: messages
    found verbatim, templates shared, (template, product on screen) pairs shared; counts and
    shares of the held-out side.

    >>> from harnessctl.sim.generate import generate_cases
    >>> o = message_overlap(generate_cases(300, seed=1, messages="train"), generate_cases(300, seed=2, messages="eval"))
    >>> o["verbatim"], o["templates_shared"], o["pairs_shared"]
    (0, 0, 0)
    """
    train, held_out = list(train), list(held_out)
    texts = {c.query for c in train}
    t_templates = {c.template for c in train if c.template}
    t_pairs = {(c.template, c.context.product_id) for c in train if c.template}
    h_templates = {c.template for c in held_out if c.template}
    h_pairs = {(c.template, c.context.product_id) for c in held_out if c.template}
    verbatim = sum(1 for c in held_out if c.query in texts)

    def share(part: int, whole: int) -> float:
        return round(part / whole, 4) if whole else 0.0

    return {
        "held_out_messages": len(held_out),
        "verbatim": verbatim,
        "verbatim_share": share(verbatim, len(held_out)),
        "held_out_texts": len({c.query for c in held_out}),
        "verbatim_texts": len({c.query for c in held_out} & texts),
        "templates": len(h_templates),
        "templates_shared": len(h_templates & t_templates),
        "templates_shared_share": share(len(h_templates & t_templates), len(h_templates)),
        "pairs": len(h_pairs),
        "pairs_shared": len(h_pairs & t_pairs),
        "pairs_shared_share": share(len(h_pairs & t_pairs), len(h_pairs)),
    }


def templates_for(key: str, messages: str = "all") -> list[str]:
    """The templates of ``key`` on one side of the split (``"all"``: every one, in order)."""
    if messages not in MESSAGE_SPLITS:
        raise ValueError(f"unknown message split {messages!r}; use one of {', '.join(MESSAGE_SPLITS)}")
    if messages == "all":
        return list(TEMPLATES[key])
    return [t for t in TEMPLATES[key] if template_split(key, t) == messages]
