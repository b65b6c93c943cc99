"""A case: one viewer message in its live-stream context, with what a correct answer needs.

Everything a case expects is stated by stable *key* (skill key, tool key, backend), never by
surface name, so the same case scores correctly under any harness variant.

>>> c = Case(id="price-0001", intent="price", query="how much is this one?",
...          context=CaseContext(product_id="P001"),
...          expect=Expectation(skill="price_promo",
...                             calls=[ExpectedCall(tool="product_details", args={"product_id": "P001"})],
...                             facts=["$19.90"]))
>>> Case.from_dict(c.to_dict()) == c
True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from harnessctl.sim.world import World

CASE_SCHEMA_VERSION = 1


@dataclass
class ExpectedCall:
    """A tool call a correct answer makes. ``args`` maps a parameter to its acceptable value,
    or to a list of acceptable values; parameters not named are free."""

    tool: str  # tool key
    args: dict[str, Any] = field(default_factory=dict)
    required: bool = True  # False: allowed, not needed (never counted as redundant)
    #: Dependency level: a round-2 call needs a round-1 result first (search, then details).
    round: int = 1


@dataclass
class Expectation:
    skill: str | None = None  # skill key the answer should load (None: none needed)
    calls: list[ExpectedCall] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # strings a correct reply contains (numbers, names, codes)
    any_facts: list[list[str]] = field(default_factory=list)  # each group: at least one must appear
    forbidden: list[str] = field(default_factory=list)  # claims a reply must never make
    handoff: bool = False  # a hand-off to a human is required
    #: Fact -> the tool key whose result it comes from, ``"<tool key>@<product id>"`` where
    #: several calls of one tool give different facts (facts from the viewer's message have
    #: none). Lets the scorer excuse a fact whose call failed however often the hook retried.
    fact_sources: dict[str, str] = field(default_factory=dict)


@dataclass
class CaseContext:
    product_id: str | None = None  # the product on screen
    viewer: dict[str, Any] = field(default_factory=dict)  # handle, region, ...
    history: list[dict[str, str]] = field(default_factory=list)  # earlier chat turns (role, content)
    product_name: str | None = None  # name of the product on screen, as the overlay shows it
    #: Other products featured earlier in the show, id -> name (what "the other one" refers to).
    lineup: dict[str, str] = field(default_factory=dict)


@dataclass
class Case:
    id: str
    intent: str
    query: str
    context: CaseContext = field(default_factory=CaseContext)
    expect: Expectation = field(default_factory=Expectation)
    suite: str = "livestream"
    seed: int = 0
    #: Fault injection plan: tool key -> list of fault kinds, one per call of that tool in the
    #: episode, retries included ("error" | "timeout" | "malformed" | "empty" | "ok");
    #: calls past the end of the list succeed.
    faults: dict[str, list[str]] = field(default_factory=dict)
    #: Which harness the case runs under: None = the shipped harness, else a variant id.
    variant: str | None = None
    tags: list[str] = field(default_factory=list)
    #: What the viewer's words pin down, read off the query (target product, region, order
    #: number, variant, height...). The oracle plans from these; scoring never reads them.
    slots: dict[str, Any] = field(default_factory=dict)
    #: The message template the query was written from, ``"<kind>:<hash>"`` (None: not generated),
    #: so the overlap between training data and the suites can be measured.
    template: str | None = None
    schema_version: int = CASE_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def environment(self) -> Any:
        """A fresh simulated world for this case, its fault plan included: the tool environment
        the runtime uses when its caller passes none (the runtime never imports the simulator)."""
        return World(case=self, seed=int(self.seed or 0))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        d = dict(d)
        ctx = d.get("context") or {}
        d["context"] = ctx if isinstance(ctx, CaseContext) else CaseContext(**ctx)
        exp = d.get("expect") or {}
        if not isinstance(exp, Expectation):
            exp = dict(exp)
            exp["calls"] = [c if isinstance(c, ExpectedCall) else ExpectedCall(**c) for c in exp.get("calls", [])]
            exp = Expectation(**exp)
        d["expect"] = exp
        return cls(**d)
