"""A declarative search configuration: retrieval variants (and the benchmark's ablations) are settings, not forks.

``SearchConfig`` is the one home of the search settings: each field carries its default, its bounds
and its help text (``SEARCH_FIELDS``), from which ``Settings`` (the ``HYPERMEM_*`` defaults), the API's
``QueryRequestSchema``, the CLI's and the MCP server's options and the override checks derive.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin, get_type_hints

if TYPE_CHECKING:
    from hypermem.config import Settings

MAX_QUERY_CHARS = 2000  # longest question, in characters


def query_problem(text: object) -> str | None:
    """What makes ``text`` unusable as a query (its field named by the caller), or None: not a non-blank string,
    over ``MAX_QUERY_CHARS``, unstorable text (``text.text_problem``), or no word to search for ("🧠🧠🧠", "the",
    "is it?": its vector is noise, and flat scores stop at the cap)."""
    from hypermem.store import bm25
    from hypermem.text import is_blank, text_problem

    if not isinstance(text, str) or is_blank(text):
        return "must be a non-empty string"
    if len(text) > MAX_QUERY_CHARS:
        return f"{len(text)} characters; the limit is {MAX_QUERY_CHARS}"
    if problem := text_problem(text):
        return problem
    if not bm25.analyze(text):
        return "holds no word to search for (only stop words, symbols or single letters)"
    return None


FROM_SETTINGS = ("k_topic", "k_episode", "k_fact", "stopping", "turn_budget", "rrf_k")  # defaults set by Settings


def _setting(default: Any, help: str, bounds: tuple[float, float] | None = None) -> Any:
    return field(default=default, metadata={"help": help, "bounds": bounds})


@dataclass(frozen=True)
class SearchConfig:
    """How one query is answered (HyperMem §3.4 levels, HingeMem §3.3 stopping); see each field's help."""

    k_topic: int = _setting(10, "Topics kept (HyperMem k^T).", (1, 500))
    k_episode: int = _setting(10, "Episodes kept (HyperMem k^E).", (1, 500))
    k_fact: int = _setting(30, "Facts kept (HyperMem k^F).", (1, 500))
    use_topics: bool = _setting(
        False,
        "True starts at the topic level (HyperMem's coarse step: episodes only from the top topics' hyperedges); False"
        " searches the episodes of the whole memory. Off by default: cross-validated on LoCoMo the topic level changed"
        " held-out recall by -0.003 (README).",
    )
    flat: bool = _setting(False, "True searches facts directly in the whole memory, without the hierarchy.")
    propagation: bool = _setting(
        True,
        "False searches the unpropagated episode and fact vectors instead of those propagated over their hyperedges"
        " (HyperMem §3.3).",
    )
    stopping: Literal["adaptive", "fixed"] = _setting(
        "adaptive",
        "adaptive (with the learned turn ranker: as many turns as hold their share of the evidence probability,"
        " turn_budget on average; with rrf: HingeMem rules by query type) or fixed (the top turn_budget).",
    )
    turn_budget: int = _setting(
        8,
        "Evidence turns per query (HiGMem: about 8): exactly, with fixed stopping; on average, with adaptive"
        " stopping and the learned turn ranker (from half to 1.75 times the query's budget: this, or for a"
        " recall-type query the ranker's recall_budget_scale times this); at most, with rrf.",
        (1, 500),
    )
    min_facts: int = _setting(8, "With turn_ranker rrf: adaptive stopping keeps at least this many facts.", (1, 500))
    rrf_k: int = _setting(10, "The RRF constant.", (1, 500))
    global_facts: bool = _setting(True, "Also fuse a memory-wide fact search into the fact level (recall safety net).")
    replies: bool = _setting(True, "A returned question turn brings its reply turn along.")
    salience: bool = _setting(
        False,
        "True adds HingeMem element matching (salience of the query's Person/Time/Location elements) to the episode"
        " score. Off by default: cross-validated on LoCoMo it changed held-out recall by -0.000 (README).",
    )
    turn_ranker: Literal["learned", "rrf"] = _setting(
        "learned",
        "learned (the learned turn ranker over every leg's candidate turns) or rrf (the hierarchy's turns fused by RRF"
        " with the turn-level leg).",
    )
    flat_weight: float = _setting(
        0.3,
        "With turn_ranker rrf: weight of the turn-level BM25 + dense leg, against the hierarchy's 1 (0: off).",
        (0, 10),
    )
    answer: bool = _setting(True, "Generate an answer when an LLM is configured.")

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> SearchConfig:
        """Defaults from ``settings``, then ``overrides``. Raises ``ValueError`` naming an unknown or bad field."""
        for name, value in overrides.items():
            if name not in SEARCH_FIELDS:
                raise ValueError(f"{name}: unknown search setting; expected one of {sorted(SEARCH_FIELDS)}")
            SEARCH_FIELDS[name].check(value)
        return replace(cls(**{name: getattr(settings, name) for name in FROM_SETTINGS}), **overrides)

    @property
    def vector_property(self) -> str:
        return "embedding" if self.propagation else "embedding_raw"


@dataclass(frozen=True)
class SearchField:
    """One search setting: ``kind`` is ``int``, ``float``, ``bool`` or ``str`` (then ``choices``)."""

    name: str
    kind: type
    default: Any
    help: str
    bounds: tuple[float, float] | None = None
    choices: tuple[str, ...] = ()

    def check(self, value: Any) -> None:
        """Raise ``ValueError`` ("name: must be ...") unless ``value`` is a valid ``name``."""
        if self.kind is int and (not isinstance(value, int) or isinstance(value, bool) or not self._within(value)):
            raise ValueError(f"{self.name}: must be an integer from {self._range}")
        if self.kind is float and (isinstance(value, bool) or not isinstance(value, int | float) or not self._within(value)):  # fmt: skip
            raise ValueError(f"{self.name}: must be a number from {self._range}")
        if self.kind is str and value not in self.choices:
            raise ValueError(f"{self.name}: must be {' or '.join(repr(c) for c in self.choices)}")
        if self.kind is bool and not isinstance(value, bool):
            raise ValueError(f"{self.name}: must be true or false")

    def _within(self, value: float) -> bool:
        return self.bounds is None or self.bounds[0] <= value <= self.bounds[1]

    @property
    def _range(self) -> str:
        low, high = self.bounds or (None, None)
        return f"{low} to {high}"


def _search_fields() -> dict[str, SearchField]:
    hints = get_type_hints(SearchConfig)
    out = {}
    for spec in fields(SearchConfig):
        hint = hints[spec.name]
        literal = get_origin(hint) is Literal
        out[spec.name] = SearchField(
            spec.name, str if literal else hint, spec.default, spec.metadata["help"], spec.metadata["bounds"],
            get_args(hint) if literal else (),
        )  # fmt: skip
    return out


SEARCH_FIELDS: dict[str, SearchField] = _search_fields()
