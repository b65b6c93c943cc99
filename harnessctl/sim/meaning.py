"""Whether a reply states a fact, by meaning rather than by spelling.

A fact is written the way :mod:`harnessctl.sim.facts` writes it (``"$19.90"``, ``"2-4 days"``,
``"15% off"``, ``"3 left"``, ``"in stock"``, ``"Jun 17"``, ``"21:00"``, ``"size M"``,
``"limit 2"``, ``"out for delivery"``, codes, handles, names). :func:`states` reads the reply
for the same meaning in any of the usual wordings, and refuses it when it is negated.

========================  ===========================================================================
kind (:func:`fact_kind`)  also accepted (all case-insensitive; number words one to ninety count)
========================  ===========================================================================
money ``$19.90``          ``$19.9``, ``$ 19.90``, ``19.90 dollars``, ``19.90 USD``, ``19.90 bucks``
money off ``$5.00 off``   a money mention of that amount with off / discount / save / savings /
                          less / cheaper within three words
percent off ``15% off``   ``15 %``, ``15 percent``, ``15 per cent``, ``15pct`` with the same words
day range ``2-4 days``    ``2 to 4 days``, ``2–4 business days``, ``between 2 and 4 days``, ``2-4 day``
days ``30 days``          ``30-day``, ``thirty days``, ``30 business/working/calendar days``
count ``3 left``          ``3 units left``, ``only 3 remaining``, ``3 still available``, ``3 in stock``,
                          ``three left``, ``3 pieces to go``
state ``in stock``        the synonym set :data:`IN_STOCK`, or a negated :data:`SOLD_OUT` phrase
state ``sold out``        the synonym set :data:`SOLD_OUT`, or a negated :data:`IN_STOCK` phrase
clock ``21:00``           ``9pm``, ``9 pm``, ``9:00 PM``, ``9 p.m.``, ``21h00``; ``noon``, ``midnight``
date ``Jun 17``           ``June 17``, ``June 17th``, ``17 June``, ``the 17th of June``
size ``size M``           ``size: M``, ``M size``, ``a size M``, ``go for M``, ``pick the M``
limit ``limit 2``         ``limit of 2``, ``max 2``, ``maximum 2``, ``up to 2``, ``2 per viewer``
order status              the synonym set :data:`STATUS_SYNONYMS` of that status
``free shipping``         ``free delivery``, ``ships free``, ``shipping is free``, ``no shipping fee``
handle ``@lily_b``        with or without the ``@``
code, id, name, text      the same words, on word boundaries, spacing and punctuation aside
========================  ===========================================================================

Polarity (:func:`polarity`): a match counts only where the clause that carries it asserts it. The
clause fails when a negator stands anywhere before the fact in it ("not", any "n't", "never",
"cannot", "no longer", "without", "fails to", "nobody", a determiner "no" close before), when its
predicate is negated after the fact ("code X does not give ...", "order X is not shipped"), when
it is a question (not an offer), when a leading "No" contradicts the viewer's question, or when
the fact is taken back (a retraction after it, "scratch that" later, "but it's gone now"). Idioms
that negate nothing said ("no need", "don't miss", "can't go wrong") and a negated ending
("doesn't end until 19:30") do not count. A negative fact ("not a medicine") is stated by its
core negated once: "isn't a medicine", "no medicine" state it; "is a medicine" and "I wouldn't
say it's not a medicine" do not.

>>> states("2-4 days", "Arrives in 2 to 4 days!"), states("10% off", "code X gives 10 percent off")
(True, True)
>>> states("in stock", "Yes, available right now!"), states("in stock", "No, it is not in stock.")
(True, False)
>>> states("Jun 15", "expected June 15th"), states("21:00", "ends at 9pm"), states("$19.90", "just 19.9 dollars")
(True, True, True)
>>> states("3 left", "only 3 units left"), states("3 left", "30 left"), states("sold out", "it's not sold out")
(True, False, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: What "in stock" may be said as (a negated sold-out phrase counts too).
IN_STOCK = (
    "in stock",
    "in-stock",
    "available",
    "still have",
    "still got",
    "have plenty",
    "plenty left",
    "plenty in stock",
    "lots left",
    "ready to ship",
    "on hand",
    "can still get",
    "can still order",
)
#: What "sold out" may be said as (a negated in-stock phrase counts too).
SOLD_OUT = (
    "sold out",
    "sold-out",
    "out of stock",
    "none left",
    "no stock",
    "no units left",
    "nothing left",
    "all gone",
    "unavailable",
    "zero left",
    "0 left",
)
#: Order statuses (as the order tool writes them) and how a reply may say each.
STATUS_SYNONYMS = {
    "processing": ("processing", "being processed", "being prepared", "being packed", "preparing"),
    "shipped": ("shipped", "dispatched", "in transit", "on its way", "on the way", "has left the warehouse"),
    "delayed": ("delayed", "running late", "behind schedule", "late"),
    "delivered": ("delivered", "has arrived", "was dropped off", "arrived"),
    "out for delivery": (
        "out for delivery",
        "with the courier",
        "with the driver",
        "on the delivery truck",
        "arriving today",
    ),
}
FREE_SHIPPING = (
    "free shipping",
    "free delivery",
    "ships free",
    "ships for free",
    "shipping is free",
    "delivery is free",
    "shipping is on us",
    "delivery is on us",
    "no shipping fee",
    "no delivery fee",
    "no shipping cost",
    "$0 shipping",
    "shipping free",
    "delivered free",
    "free of charge",
)
ORDER_NUMBER = ("order number", "order #", "order no", "order id", "order code", "order reference")
#: Words after a fact that take it back ("BEAUTY15 has expired").
RETRACTIONS = (
    "no longer",
    "not anymore",
    "any more",
    "anymore",
    "expired",
    "invalid",
    "not valid",
    "doesn't work",
    "does not work",
    "isn't valid",
    "is not valid",
    "not available",
    "ended",
    "is over",
    "was wrong",
    "not right",
    "cancelled",
    "canceled",
    "closed",
)
#: Phrases that end an offer for the rest of the sentence ("the flash sale is over, it was ...").
_SALE_OVER = ("is over", "are over", "has ended", "have ended", "already ended", "has expired", "have expired")
#: Cues before a value that make it history or a comparison, not the value now.
_PAST_CUES = ("was", "were", "used to be", "used to", "had been", "had")
_COMPARATIVES = (
    "more than",
    "less than",
    "over",
    "under",
    "above",
    "below",
    "higher than",
    "lower than",
    "cheaper than",
    "at least",
    "beyond",
    "except",
    "instead of",
    "rather than",
)
_COUNTERFACTUAL = (
    "should have been",
    "would have been",
    "could have been",
    "supposed to be",
    "meant to be",
    "used to be",
)
_VALUE_KINDS = (
    "money",
    "money_off",
    "percent_off",
    "day_range",
    "days",
    "count",
    "in_stock",
    "sold_out",
    "limit",
    "free_shipping",
)
#: A following clause that only says no or takes the fact back: "..., but it isn't", "... - not
#: anymore", "..., but none now", "..., but it's been cancelled".
_BARE_NO = re.compile(
    r"^[\s,;:\-—]*(?:but\s+|though\s+)?(?:(?:(?:it|that|they|this|he|she)\s+)?(?:isn't|is not|hasn't|has not|wasn't|"
    r"was not|aren't|are not|didn't|did not|won't|doesn't|does not|not|nope|no|none)"
    r"(?:\s+(?:anymore|any more|yet|really|now|right now|at all|true|the case|left))?\s*(?:[;,.!?]|$)"
    r"|(?:it|that|they|this)(?:\s+\w+)?(?:'s|'re|\s+is|\s+are|\s+was|\s+has|\s+have)?(?:\s+(?:been|now|already|all))*"
    r"\s+(?:cancelled|canceled|expired|ended|over|closed|gone|invalid|void|finished)\b)"
)

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
}
_NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90})
_NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b")
_DATE_FACT_RE = r"(?:" + "|".join(_MONTHS) + r") \d{1,2}"
_UNITS = r"(?:units?|pieces?|pcs|items?|of them|more|in total|bottles?|packs?|pairs?|sets?)"
_OFF_WORDS = ("off", "discount", "discounted", "save", "saves", "saving", "savings", "less", "cheaper", "reduction")


@dataclass(frozen=True)
class Mention:
    """Where a fact was found in the (normalised) reply, and whether it was negated there."""

    start: int
    end: int
    negated: bool


def fact_kind(fact: str) -> str:
    """How a fact is read: ``money``, ``money_off``, ``percent_off``, ``day_range``, ``days``,
    ``count``, ``in_stock``, ``sold_out``, ``clock``, ``date``, ``size``, ``limit``, ``status``,
    ``free_shipping``, ``order_number``, ``handle`` or ``text``.

    >>> [fact_kind(f) for f in ("$5.00 off", "15% off", "2-4 days", "Jun 17", "size M", "BEAUTY15")]
    ['money_off', 'percent_off', 'day_range', 'date', 'size', 'text']
    """
    f = fact.strip().lower()
    if re.fullmatch(r"\$\d+(?:\.\d+)?", f):
        return "money"
    if re.fullmatch(r"\$\d+(?:\.\d+)? off", f):
        return "money_off"
    if re.fullmatch(r"\d+(?:\.\d+)?% off", f):
        return "percent_off"
    if re.fullmatch(r"\d+-\d+ days", f):
        return "day_range"
    if re.fullmatch(r"\d+ days", f):
        return "days"
    if re.fullmatch(r"\d+ left", f):
        return "count"
    if f == "in stock":
        return "in_stock"
    if f == "sold out":
        return "sold_out"
    if re.fullmatch(r"\d{1,2}:\d{2}", f):
        return "clock"
    if re.fullmatch(_DATE_FACT_RE, f):
        return "date"
    if re.fullmatch(r"size \S+", f):
        return "size"
    if re.fullmatch(r"limit \d+", f):
        return "limit"
    if f in STATUS_SYNONYMS:
        return "status"
    if f == "free shipping":
        return "free_shipping"
    if f == "order number":
        return "order_number"
    if re.fullmatch(r"@[\w.]+", f):
        return "handle"
    return "text"


def states(
    fact: str,
    reply: str,
    subject: str | None = None,
    others: tuple[str, ...] | list[str] = (),
    question: str | None = None,
) -> bool:
    """Whether ``reply`` states ``fact`` (in any accepted wording, in a clause that asserts it).

    With a ``subject`` (the product a fact belongs to) and ``others`` (other products the
    reply may name), the fact must be said of its subject: where the reply names products,
    the name nearest to the mention (before it in the same sentence first) must be the subject.

    >>> states("$7.90", "Toner is $17.90, Mascara is $7.90.", subject="Mascara", others=["Toner"])
    True
    >>> states("$7.90", "Toner is $7.90, Mascara is $17.90.", subject="Mascara", others=["Toner"])
    False

    With the viewer's ``question``, a leading "No" is read as its answer: it contradicts the fact
    unless the question asked about the opposite.

    >>> states("in stock", "No, it's in stock!", question="is it sold out?"), states("in stock", "No, it's in stock!")
    (True, False)
    """
    found = [m for m in mentions(fact, reply, question=question) if not m.negated]
    if not found or not subject:
        return bool(found)
    text = normalise(reply)
    names = [(a, b, True) for a, b in _phrase_spans(text, (subject,))]
    names += [(a, b, False) for o in others if o and o.lower() != subject.lower() for a, b in _phrase_spans(text, (o,))]
    if not any(not own for _, _, own in names):
        return True  # no other product named: nothing to confuse it with
    return any(_nearest_is_own(text, m, names) for m in found)


def _nearest_is_own(text: str, m: Mention, names: list[tuple[int, int, bool]]) -> bool:
    s_left, s_right = _sentence_bounds(text, (m.start, m.end))
    before = [(m.start - b, own) for a, b, own in names if b <= m.start and a >= s_left]
    if before:
        return min(before)[1]
    after = [(a - m.end, own) for a, b, own in names if a >= m.end and b <= s_right]
    return min(after)[1] if after else True


def mentions(fact: str, reply: str, question: str | None = None) -> list[Mention]:
    """Every place ``reply`` says ``fact`` or its opposite state, with its polarity: a negated
    ``sold out`` phrase is an un-negated mention of ``in stock`` and the other way round; a
    negative fact ("not a medicine") is a mention of its core ("a medicine", "no medicine") in a
    clause that negates it once ("isn't a medicine" states it, "I wouldn't say it's not a
    medicine" does not)."""
    text = normalise(reply)
    kind = fact_kind(fact)
    f = fact.strip().lower()
    core = _negative_core(f) if kind == "text" else None
    if core is not None:
        spans = _core_spans(text, core)
        return [
            Mention(a, b, _negated(text, (a, b), own=core, kind=kind, question=question, negative=True))
            for a, b in spans
        ]
    spans: list[tuple[int, int]] = []
    flipped: list[tuple[int, int]] = []  # the opposite state, negated: it states this fact
    if kind == "money":
        spans = _money_spans(text, float(f[1:]))
    elif kind == "money_off":
        spans = [s for s in _money_spans(text, float(f[1:].split()[0])) if _near(text, s, _OFF_WORDS)]
    elif kind == "percent_off":
        value = _num(f.split("%")[0])
        pat = r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b|pct\b)"
        spans = [
            m.span() for m in re.finditer(pat, text) if _num(m.group(1)) == value and _near(text, m.span(), _OFF_WORDS)
        ]
    elif kind == "day_range":
        lo, hi = (int(x) for x in f.split()[0].split("-"))
        spans = _range_spans(text, lo, hi)
    elif kind == "days":
        n = int(f.split()[0])
        spans = [
            m.span()
            for m in re.finditer(
                rf"(?<![\d.\-])(?<!\d to ){n}(?:\s|-)?(?:(?:business|working|calendar)\s+)?days?\b", text
            )
        ]
    elif kind == "count":
        n = int(f.split()[0])
        pat = (
            rf"(?<![\d.$])(?:only\s+)?{n}\s+(?:{_UNITS}\s+)?(?:still\s+)?(?:left|remaining|available|in stock|to go)\b"
        )
        spans = [m.span() for m in re.finditer(pat, text)]
        spans += [
            m.span()
            for m in re.finditer(rf"\b(?:down to|only|just)\s+{n}(?!\.?\d)(?!\s*(?:%|percent|days?|dollars))", text)
        ]
    elif kind in ("in_stock", "sold_out"):
        same, other = (IN_STOCK, SOLD_OUT) if kind == "in_stock" else (SOLD_OUT, IN_STOCK)
        spans = _phrase_spans(text, same)
        # "not sold out" says in stock; "not available" says sold out.
        opposite = _phrase_spans(text, other)
        flipped = [s for s in opposite if _negated(text, s)]
        spans = [s for s in spans if not _inside_any(s, opposite)]
    elif kind == "clock":
        h, mi = (int(x) for x in f.split(":"))
        spans = _clock_spans(text, h, mi)
    elif kind == "date":
        mon, day = f.split()
        spans = _date_spans(text, _MONTHS.index(mon[:3]) + 1, int(day))
    elif kind == "size":
        spans = _size_spans(text, f.split(None, 1)[1])
    elif kind == "limit":
        n = int(f.split()[1])
        pats = [
            rf"\blimit(?:ed)?(?:\s+(?:of|is|to))?\s*:?\s*{n}(?!\.?\d)",
            rf"\b(?:max|maximum|at most|up to)\.?\s*(?:of\s+)?{n}(?!\.?\d)",
            rf"(?<![\d.$]){n}\s+(?:{_UNITS}\s+)?(?:per|a|each)\s+(?:viewer|person|customer|order|account|head)\b",
            rf"(?<![\d.$]){n}\s+max\b",
        ]
        spans = [m.span() for p in pats for m in re.finditer(p, text)]
    elif kind == "status":
        spans = _phrase_spans(text, STATUS_SYNONYMS[f])
        if f != "out for delivery":
            spans = [s for s in spans if not _inside_any(s, _phrase_spans(text, STATUS_SYNONYMS["out for delivery"]))]
    elif kind == "free_shipping":
        spans = _phrase_spans(text, FREE_SHIPPING)
        # "shipping to Central is free", "delivery is totally free"
        spans += [
            m.span()
            for m in re.finditer(
                r"\b(?:shipping|delivery)\b(?:\s+[\w']+){0,3}?\s+(?:is|'s)(?:\s+(?:totally|completely|always|also|still|now))?\s+free\b",
                text,
            )
        ]
    elif kind == "order_number":
        spans = _phrase_spans(text, ORDER_NUMBER)
    elif kind == "handle":
        spans = _phrase_spans(text, (f, f[1:]))
    else:
        spans = _phrase_spans(text, (normalise(fact),))
    out = [Mention(a, b, _negated(text, (a, b), own=f, kind=kind, question=question)) for a, b in spans]
    out += [Mention(a, b, False) for a, b in flipped]
    return sorted(out, key=lambda m: m.start)


def normalise(text: str) -> str:
    """Lower case, one kind of dash and apostrophe, number words as digits, single spaces."""
    t = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    t = re.sub(r"[\u2010-\u2015\u2212]", "-", t)
    t = re.sub(
        r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|eight|nine)\b",
        lambda m: str(_NUMBER_WORDS[m.group(1)] + _NUMBER_WORDS[m.group(2)]),
        t,
    )
    t = _NUMBER_WORD_RE.sub(lambda m: str(_NUMBER_WORDS[m.group(1)]), t)
    return re.sub(r"\s+", " ", t).strip()


# -- finding values ------------------------------------------------------------------------


def _num(s: str) -> float:
    return round(float(s.replace(",", "")), 2)


def _money_spans(text: str, value: float) -> list[tuple[int, int]]:
    pats = (
        r"\$\s?(\d+(?:[.,]\d{1,2})?)(?![\d])",
        r"(?<![\d.$])(\d+(?:\.\d{1,2})?)\s*(?:dollars?|usd|bucks)\b",
        r"\busd\s?(\d+(?:\.\d{1,2})?)(?![\d])",
    )
    return [m.span() for p in pats for m in re.finditer(p, text) if abs(_num(m.group(1)) - value) < 0.005]


def _range_spans(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    days = r"(?:\s*(?:business|working|calendar)?\s*days?\b|-day\b)"
    pats = (
        rf"(?<![\d.]){lo}\s*(?:-|to|or|/)\s*{hi}{days}",
        rf"\bbetween\s+{lo}\s+and\s+{hi}{days}",
        rf"\bfrom\s+{lo}\s+to\s+{hi}{days}",
    )
    return [m.span() for p in pats for m in re.finditer(p, text)]


def _clock_spans(text: str, hour: int, minute: int) -> list[tuple[int, int]]:
    out = []
    for m in re.finditer(r"(?<![\d.:$])(\d{1,2})(?:[:.h](\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?![a-z])", text):
        h, mi = int(m.group(1)) % 12, int(m.group(2) or 0)
        if m.group(3).startswith("p"):
            h += 12
        if (h, mi) == (hour, minute):
            out.append(m.span())
    for m in re.finditer(r"(?<![\d.:$])(\d{1,2})[:h](\d{2})(?!\d)(?!\s*(?:a\.?m|p\.?m))", text):
        if (int(m.group(1)), int(m.group(2))) == (hour, minute) or (
            hour >= 13
            and (int(m.group(1)), int(m.group(2))) == (hour - 12, minute)
            and _near(text, m.span(), ("tonight", "evening"))
        ):
            out.append(m.span())
    named = {(12, 0): ("noon", "midday"), (0, 0): ("midnight",)}.get((hour, minute), ())
    out += _phrase_spans(text, named)
    return out


def _date_spans(text: str, month: int, day: int) -> list[tuple[int, int]]:
    mon = _MONTHS[month - 1]
    name = rf"{mon}[a-z]*\.?"
    pats = (
        rf"\b{name}\s+(?:the\s+)?{day}(?:st|nd|rd|th)?(?!\d)",
        rf"(?<![\d.]){day}(?:st|nd|rd|th)?\s+(?:of\s+)?{name}(?![a-z])",
    )
    return [m.span() for p in pats for m in re.finditer(p, text)]


def _size_spans(text: str, size: str) -> list[tuple[int, int]]:
    s = re.escape(size.lower())
    pats = (
        rf"\bsize\s*:?\s*(?:an?\s+|the\s+)?{s}(?![\w])",
        rf"(?<![\w']){s}\s+(?:size|would fit|will fit|fits|is your size|is best|is right)\b",
        rf"\b(?:go for|pick|get|take|choose|recommend|suggest|try)\s+(?:an?\s+|the\s+)?{s}(?![\w])",
        rf"\b(?:you're|you are|youre)\s+(?:an?\s+)?{s}(?![\w])",
    )
    return [m.span() for p in pats for m in re.finditer(p, text)]


def _negative_core(fact: str) -> str | None:
    """The positive core of a negative fact: ``"not a medicine" -> "a medicine"`` (None when the
    fact is not negative)."""
    m = re.fullmatch(r"(?:not|no|never)\s+(.+)", fact)
    return m.group(1) if m else None


def _core_spans(text: str, core: str) -> list[tuple[int, int]]:
    """Where ``core`` is said, its leading article optional ("a medicine", "no medicine")."""
    words = normalise(core).split()
    if words and words[0] in ("a", "an", "the"):
        words = words[1:]
    pat = r"(?:(?:a|an|the)\s+)?" + r"\s+".join(re.escape(w) for w in words)
    return [m.span() for m in re.finditer(rf"(?<![\w@]){pat}(?![\w])", text)]


def _phrase_spans(text: str, phrases: tuple[str, ...] | list[str]) -> list[tuple[int, int]]:
    out = []
    for p in phrases:
        if not p:
            continue
        words = [re.escape(w) for w in normalise(p).split()]
        pat = r"\s*[-,]?\s*".join(words)
        for m in re.finditer(rf"(?<![\w@]){pat}(?![\w])", text):
            out.append(m.span())
    return out


def _inside_any(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(a <= span[0] and span[1] <= b and (a, b) != span for a, b in others)


_CLAUSE_END = re.compile(r"[.!?;,:)](?=\s|$)|\s\(|\s[-—]\s|\s(?:but|though|however|while|whereas)\s")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _clause_bounds(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The clause around ``span``: between punctuation that ends a clause (a decimal point or a
    clock's colon does not), a dash between spaces, or a "but"."""
    left = 0
    for m in _CLAUSE_END.finditer(text, 0, span[0]):
        left = m.end()
    m = _CLAUSE_END.search(text, span[1])
    return left, (m.start() if m else len(text))


def _sentence_bounds(text: str, span: tuple[int, int]) -> tuple[int, int]:
    left = 0
    for m in _SENTENCE_END.finditer(text, 0, span[0]):
        left = m.end()
    m = _SENTENCE_END.search(text, span[1])
    return left, (m.end() if m else len(text))


def _near(text: str, span: tuple[int, int], words: tuple[str, ...], window: int = 3) -> bool:
    left, right = _clause_bounds(text, span)
    before = re.findall(r"[\w'$%]+", text[left : span[0]])[-window:]
    after = re.findall(r"[\w'$%]+", text[span[1] : right])[:window]
    return any(w in words for w in before + after) or any(w in text[span[0] : span[1]] for w in words)


def _negated(
    text: str,
    span: tuple[int, int],
    own: str = "",
    kind: str = "text",
    question: str | None = None,
    negative: bool = False,
) -> bool:
    """Whether the mention at ``span`` is not an assertion of the fact (see :func:`polarity`)."""
    return polarity(text, span, own=own, kind=kind, question=question, negative=negative) < 0


def polarity(
    text: str,
    span: tuple[int, int],
    *,
    own: str = "",
    kind: str = "text",
    question: str | None = None,
    negative: bool = False,
) -> int:
    """+1 when the clause carrying the mention at ``span`` asserts it, -1 when it does not.

    The clause (between punctuation, a spaced dash, or a conjunction that starts a clause: "but",
    "and", "so", "if", "unless", "as long as", "which" ...) is read for:

    - negation before the mention, anywhere in the clause: a negator (:data:`NEGATORS`: "not",
      any "n't", "no", "never", "cannot", "no longer", "without", "fails to", "unable to",
      "nobody" ...); a determiner ("no", "without", "none") only within six words, since it
      negates its own noun phrase; an idiom that negates nothing said ("no need", "don't miss",
      "can't go wrong") and a negated ending ("doesn't end until") are not negations;
    - negation of the predicate after the mention ("code X doesn't work", "order X is not
      shipped", "ticket X won't be picked up"): a negated auxiliary, "never", "no longer",
      "fails to" — a bare "not" after it is a contrast ("$9.90, not $12") and counts for nothing;
    - a question: the clause ends with "?" or its sentence opens like one ("Is it ...", "Maybe
      ..."), unless it is an offer ("want 24 cm instead?", "would you like ...");
    - a leading "No" / "Nope" in the reply's first sentence, up to a "but": it contradicts the
      facts it introduces, unless the fact is negative or the viewer's ``question`` asked about the
      opposite ("is it sold out?" → "No, it's in stock");
    - history and comparison just before a value ("was", "used to be", "more than"), a
      retraction after it ("expired", "no longer", "cancelled"), a following clause that only
      says no ("but it isn't", "but it's gone now"), a later "scratch that" / "my mistake", and
      a sentence that says the offer is over.

    >>> t = normalise("Code ROSE5 does not give $5.00 off")
    >>> polarity(t, (5, 10)), polarity(normalise("Only 6 left, don't miss it!"), (0, 11))
    (-1, 1)
    """
    own_words = set(re.findall(r"[\w']+", own))
    s_left, s_right = _sentence_bounds(text, span)
    if any(r in text[s_left : span[0]] for r in _SALE_OVER):
        return -1  # "The flash sale is over, it was $5.90": all that follows is history
    if _RETRACTED.search(text, span[1]):
        return -1  # "... ticket HT9095. Actually, scratch that, the desk is closed."
    left, right = _polarity_bounds(text, span)
    if kind != "order_number" and _asked(text, span, (left, right), (s_left, s_right)):
        return -1  # "Is it in stock?", "Maybe $13.90?": asked, not said
    before = _unidiom(text[left : span[0]])
    words = re.findall(r"[\w']+", before)
    inherited = _inherited_negation(text, left, right, s_left)
    negations = _negations_before(words) + inherited
    if (negations % 2 == 0) if negative else negations:
        return -1  # a negative fact's core must be negated once (or thrice), any other fact not at all
    if negative:
        return 1
    tail = " " + " ".join(words[-4:]) + " "
    if any(f" {c} " in tail for c in _COUNTERFACTUAL):
        return -1
    if kind in _VALUE_KINDS:
        near = " " + " ".join(words[-3:]) + " "
        if any(f" {c} " in near for c in _PAST_CUES + _COMPARATIVES):
            return -1
    after_text = _unidiom(text[span[1] : right])
    after_words = re.findall(r"[\w']+", after_text)
    after = " " + " ".join(after_words[:4]) + " "
    if any(f" {r} " in after and not set(r.split()) <= own_words for r in RETRACTIONS):
        return -1
    if _PREDICATE_NEGATION.search(" " + " ".join(after_words) + " "):
        return -1
    if _BARE_NO.match(text[right:s_right]):
        return -1
    if _contradicted_by_no(text, span, kind, own, question):
        return -1
    return 1


#: Negators that negate the rest of their clause, wherever they stand before a fact.
NEGATORS = (
    "not",
    "never",
    "cannot",
    "nor",
    "neither",
    "nobody",
    "nowhere",
    "unable",
    "fail",
    "fails",
    "failed",
    "failing",
)
#: Determiners that negate their own noun phrase: they negate a fact only close before it.
_NEGATING_DETERMINERS = ("no", "none", "without", "nothing", "zero")
_DETERMINER_REACH = 6
#: Phrases that start with a negator but negate nothing that was said.
_NEGATION_IDIOMS = (
    "no worries",
    "no worry",
    "no problem",
    "no need",
    "no joke",
    "no catch",
    "no doubt",
    "no kidding",
    "no questions asked",
    "no later than",
    "no action needed",
    "no wrong choice",
    "not only",
    "not bad",
    "not sure why",
    "not to mention",
    "don't miss",
    "don't forget",
    "don't wait",
    "don't worry",
    "don't hesitate",
    "do not miss",
    "never miss",
    "never been cheaper",
    "never been better",
    "never been easier",
    "can't go wrong",
    "cannot go wrong",
    "can't beat",
    "can't wait",
    "can't believe",
    "won't regret",
    "won't last long",
    "without a doubt",
    "nothing beats",
)
_IDIOM_RE = re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(i) for i in _NEGATION_IDIOMS) + r")(?![\w'])")
#: Verbs of ending: negated, with "until" or "before", they say the thing lasts.
_ENDINGS = ("end", "ends", "ended", "expire", "expires", "finish", "finishes", "stop", "stops", "close", "closes")
#: A negated predicate after the fact: "doesn't work", "is not shipped", "will never", "fails to".
_PREDICATE_NEGATION = re.compile(
    r" (?:\w+n't|cannot|(?:is|are|was|were|be|been|am|do|does|did|has|have|had|will|would|can|could|should|shall|may"
    r"|might|must|it's|that's|there's) not|never|no longer|fail(?:s|ed)? to|unable to) "
)
#: Clause-starting conjunctions: a negation on one side of them is not on the other.
_CONJUNCTIONS = re.compile(
    r"\s(?:but|though|however|while|whereas|and|so|if|unless|as long as|once|because|which|that|who|or|since|then)\s"
)
#: Later words that take back what was said before them.
_RETRACTED = re.compile(
    r"\b(?:scratch that|my mistake|my bad|i was wrong|that's wrong|that was wrong|ignore that|i take that back|"
    r"correction:|never mind|wait,? no|actually,? no|oh wait)\b"
)
#: The start of a sentence that asks rather than says.
_QUESTION_OPENERS = re.compile(
    r"^\W*(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|maybe|perhaps|isn't|aren't)\b"
)
#: A question that ends on a hedge: what came before it is a guess.
_HEDGED = re.compile(r"[,\s](?:maybe|perhaps|possibly|or so|or not|i think|i guess|i believe)\s*\?+\s*$")
#: A trailing question that doubts what came before it ("..., is that right?"); a negative tag
#: ("..., isn't that a steal?") affirms it and is not one.
_DOUBTING_TAG = re.compile(
    r"[,;]\s*(?:or\s+)?(?:is|was|are|were|did|does|do)\s+(?:that|it|this|they)\b[^,;.!?]*\?+\s*$"
)
#: Questions that offer something: the fact in them is said, not doubted.
_OFFER = re.compile(
    r"\b(?:want|wanna|would you like|like to see|how about|shall i|fancy|interested in|care for|do you want)\b"
)
#: A leading "No" that answers the viewer's question: the interjection, with its punctuation ("No,
#: ...", "Nope!"); "No need", "No coupon" are determiners, read in their clause.
_LEADING_NO = re.compile(r"^\W*(?:(?:sadly|sorry|unfortunately),?\s+)?(?:no|nope|nah)\s*(?:[,.!;:—-]|$)")


def _polarity_bounds(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The clause around ``span`` for polarity: :func:`_clause_bounds` narrowed at a conjunction."""
    left, right = _clause_bounds(text, span)
    for m in _CONJUNCTIONS.finditer(text, left, span[0]):
        left = m.end()
    m = _CONJUNCTIONS.search(text, span[1], right)
    return left, (m.start() if m else right)


_COPULAS = frozenset(
    "is are was were be been am 's 're will would can could should has have had do does did gets get gives give "
    "takes take runs run arrives arrive ships ship".split()
)


def _inherited_negation(text: str, left: int, right: int, s_left: int) -> int:
    """1 when a short verbless clause takes the negation of the clause a comma joins it to: "A team
    member will not follow up, ticket HT2570" — the ticket is said as part of the negated promise.
    Only a negated verb carries over ("No coupon, $19.90 live" still says the price); a clause of
    its own — more than four words, a verb, a participle ("expected Jun 16") or its own negator
    ("..., not a medicine") — takes nothing."""
    words = re.findall(r"[\w'$%.:@]+", text[left:right])
    if not words or len(words) > 4 or any(_verbal(w) or _is_negator(w) for w in words):
        return 0
    head = text[s_left:left].rstrip()
    if not head.endswith(","):
        return 0
    prev_left, prev_right = _polarity_bounds(text, (len(head) - 1, len(head) - 1))
    prev_left = max(prev_left, s_left)
    prev_words = re.findall(r"[\w']+", _unidiom(text[prev_left:prev_right]))
    if _PREDICATE_NEGATION.search(" " + " ".join(prev_words) + " ") or any(_is_negator(w) for w in prev_words):
        return 1
    return _inherited_negation(text, prev_left, prev_right, s_left)


def _verbal(word: str) -> bool:
    """A verb, an auxiliary or a participle, roughly: enough to tell a clause from a fragment."""
    return word in _COPULAS or word.endswith(("'s", "'re", "'m", "'ll", "'d", "ed"))


def _unidiom(text: str) -> str:
    return _IDIOM_RE.sub(" ", text)


def _is_negator(word: str) -> bool:
    return word in NEGATORS or word.endswith("n't")


def _negations_before(words: list[str]) -> int:
    """How many negations stand before a fact in its clause: negators anywhere, determiners
    within reach; a negator followed by a verb of ending and "until"/"before" ("doesn't end
    until 19:30") negates the ending, not the fact. "no longer" counts once."""
    n = 0
    for i, w in enumerate(words):
        rest = words[i + 1 :]
        if _is_negator(w) or (w == "no" and rest[:1] == ["longer"]):
            if any(e in rest for e in _ENDINGS) and any(u in rest for u in ("until", "till", "before")):
                continue
            n += 1
        elif w in _NEGATING_DETERMINERS and len(words) - i <= _DETERMINER_REACH:
            n += 1
    return n


def _asked(text: str, span: tuple[int, int], clause: tuple[int, int], sentence: tuple[int, int]) -> bool:
    """Whether the mention is asked about: its clause ends with "?" (and its sentence offers
    nothing: "..., want that one?"), or its sentence opens as a question that is not an offer
    ("Is it true that ...?" asks, "Would you like ...?" offers)."""
    s_left, s_right = sentence
    said = text[s_left:s_right]
    if not said.rstrip().endswith("?") and text[clause[1] : clause[1] + 1] != "?":
        return False
    if _QUESTION_OPENERS.match(text[s_left : span[0]]):
        return not _OFFER.match(said.lstrip(" \"'([*"))
    if _HEDGED.search(said) or _DOUBTING_TAG.search(said):
        return True  # "Size S, maybe?", "$13.90, or was that yesterday?", "HT7052, is that yours?"
    return text[clause[1] : clause[1] + 1] == "?" and not _OFFER.search(said)


def _contradicted_by_no(text: str, span: tuple[int, int], kind: str, own: str, question: str | None) -> bool:
    """A reply that opens "No, <fact>" contradicts the fact, up to a "but", unless the fact is
    negative or the viewer asked about its opposite ("is it sold out?" → "No, it's in stock")."""
    m = _LEADING_NO.match(text)
    if not m or text[: m.end()].count(" ") > 2:
        return False
    s_left, _ = _sentence_bounds(text, span)
    if s_left != 0 or re.search(r"\s(?:but|though|however)\s", text[m.end() : span[0]]):
        return False
    if kind == "sold_out" or set(re.findall(r"[\w']+", own)) & {"not", "no", "never"}:
        return False
    return not _asks_opposite(question or "", kind, own)


def _asks_opposite(question: str, kind: str, own: str) -> bool:
    """Whether the viewer's question asked about a state other than the fact's, so that "No"
    answers it: a sold-out or in-stock phrase, another order status, another value of the kind."""
    q = normalise(question)
    if not q:
        return False
    if kind == "in_stock":
        return bool(_phrase_spans(q, SOLD_OUT))
    if kind == "status":
        return any(_phrase_spans(q, syn) for st, syn in STATUS_SYNONYMS.items() if st != own)
    if kind in ("money", "money_off"):
        return bool(re.search(r"\$\s?\d", q)) and not _money_spans(q, float(own[1:].split()[0]))
    return False
