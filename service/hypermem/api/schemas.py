"""Marshmallow schemas of every request and response body; the OpenAPI document is generated from them.

Request schemas reject unknown fields (422 naming the field). Strings refuse NUL characters,
which no graph engine accepts inside a parameter. Timestamps are ISO 8601; a timezone, when
given, is dropped and the wall-clock time kept (the memory reasons in conversation-local time).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marshmallow import (
    INCLUDE,
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_dump,
    post_load,
    validate,
    validates_schema,
)

from hypermem import browse
from hypermem.model import EARLIEST_YEAR, LATEST_YEAR
from hypermem.retrieve.config import MAX_QUERY_CHARS, SEARCH_FIELDS, SearchField
from hypermem.store.ids import repeated_id, repeated_id_note
from hypermem.text import (
    EDGE_BLANK,
    IDENTIFIER_CONTROLS,
    INVISIBLE,
    MAX_IDENTIFIER_CHARS,
    UNSEEN,
    encodable,
    is_blank,
    pattern_gap,
    text_problem,
)

_BRAILLE_BLANK = f"\\u{ord(EDGE_BLANK):04x}"
_EDGE = rf"[^\s{_BRAILLE_BLANK}{IDENTIFIER_CONTROLS}{INVISIBLE}]"  # an identifier's first and last character
_KEY_EDGE = rf"[^\s/{_BRAILLE_BLANK}{IDENTIFIER_CONTROLS}{INVISIBLE}]"
_PATTERNS = {
    # (pattern, error) by kind; patterns go into the OpenAPI document, so generated clients comply.
    "text": (r"^[^\x00]*$", "must not contain NUL characters"),
    "non_blank": (rf"^[^\x00]*[^\s\x00{UNSEEN}][^\x00]*$", "must not be blank or contain NUL characters"),
    "identifier": (
        rf"^{_EDGE}(?:[^{IDENTIFIER_CONTROLS}{INVISIBLE}]*{_EDGE})?$",
        "must not be blank, start or end with whitespace or a braille blank, or contain control characters (tabs and "
        "line breaks included) or invisible format characters",
    ),
    "key": (
        rf"^{_KEY_EDGE}(?:[^/{IDENTIFIER_CONTROLS}{INVISIBLE}]*{_KEY_EDGE})?$",
        "must not be blank, start or end with whitespace or a braille blank, or contain '/', control characters (tabs "
        "and line breaks included) or invisible format characters",
    ),
}


def _encodable(value: str) -> None:
    """Refuse a lone surrogate (JSON allows ``"\\ud83d"``; no engine, hash or tokenizer takes it)."""
    if not encodable(value):
        raise ValidationError("is not valid UTF-8 (unpaired surrogate)")


class _Pattern(validate.Regexp):
    """``validate.Regexp`` (its pattern goes into the OpenAPI document) that also refuses, with the same error, what
    the pattern cannot say (``text.pattern_gap``: a lone combining mark, a tag character in an identifier)."""

    def __init__(self, kind: str):
        pattern, error = _PATTERNS[kind]
        super().__init__(pattern, error=error)
        self.kind = kind

    def __call__(self, value):  # strings only (Regexp also takes bytes)
        try:
            value = super().__call__(value)
        except ValidationError:
            raise ValidationError(self._problem(value)) from None
        if self.kind != "text" and pattern_gap(value, identifier=self.kind != "non_blank"):
            raise ValidationError(self._problem(value))
        return value

    def _problem(self, value: str) -> str:
        """For an identifier or key, which of the pattern's rules ``value`` breaks, as the CLI and MCP say it
        (``text.text_problem``: "must not contain '/'"); else the pattern's whole error."""
        found = None
        if self.kind in ("identifier", "key"):
            found = text_problem(value, key=self.kind == "key", identifier=True)
        return found if found is not None else self._format_error(value)


class Text(fields.String):
    """A string of at most ``max_length`` characters without NUL or lone surrogates. ``blank=False``
    also refuses whitespace-only strings; ``identifier`` refuses blanks, leading or trailing whitespace and
    control characters, tab, newline and carriage return included (a speaker); ``key`` also '/' (an id of the caller's)."""

    def __init__(
        self,
        *,
        min_length: int = 0,
        max_length: int | None = 20_000,
        blank: bool = True,
        key: bool = False,
        identifier: bool = False,
        **kwargs,
    ):
        kind = "key" if key else "identifier" if identifier else "text" if blank else "non_blank"
        validators: list[Callable[[Any], Any]] = [
            _encodable,
            validate.Length(min=min_length, max=max_length),
            _Pattern(kind),
        ]
        super().__init__(validate=validators, **kwargs)


class RequestSchema(Schema):
    class Meta:
        unknown = RAISE


class PassThroughSchema(Schema):
    """Dumps the declared fields, and keeps any other key of the object as it is (forward compatible)."""

    class Meta:
        unknown = INCLUDE  # documented as additionalProperties: true

    @post_dump(pass_original=True)
    def _keep_extra(self, data: dict, original, **kwargs) -> dict:
        if isinstance(original, dict):
            for key, value in original.items():
                data.setdefault(key, value)
        return data


# --- ingest ----------------------------------------------------------------------------------
class MessageSchema(RequestSchema):
    message_id = Text(
        required=True,
        min_length=1,
        max_length=MAX_IDENTIFIER_CHARS,
        key=True,
        metadata={"description": "Unique within the memory; re-sending it is a no-op."},
    )
    speaker = Text(required=True, min_length=1, max_length=MAX_IDENTIFIER_CHARS, identifier=True)
    text = Text(
        required=True,
        max_length=None,
        metadata={
            "description": "The utterance, stored whole (long ones are searched as passages); at most "
            "Settings.max_message_chars and the request body limit. May be empty with an image_caption."
        },
    )
    timestamp = fields.DateTime(
        required=True, metadata={"description": "ISO 8601; a timezone is dropped (wall-clock time kept)."}
    )
    session_id = Text(
        min_length=1,
        max_length=MAX_IDENTIFIER_CHARS,
        key=True,
        load_default=None,
        metadata={"description": "Defaults to the timestamp's date."},
    )
    image_caption = Text(
        max_length=2_000, load_default=None, allow_none=True, metadata={"description": "Caption of a shared image."}
    )

    @validates_schema
    def _has_content(self, data: dict, **kwargs) -> None:
        if is_blank(data.get("text", "")) and is_blank(data.get("image_caption") or ""):
            raise ValidationError("text or image_caption must be non-blank", "text")

    @post_load
    def _normalise(self, data: dict, **kwargs) -> dict:
        when = data["timestamp"].replace(tzinfo=None)
        if not EARLIEST_YEAR <= when.year <= LATEST_YEAR:
            raise ValidationError(f"must be in the years {EARLIEST_YEAR}-{LATEST_YEAR}", "timestamp")
        data["timestamp"] = when
        data["session_id"] = data["session_id"] or when.date().isoformat()
        return data


@dataclass(frozen=True)
class RejectedItem:
    """A message refused in partial mode: its errors by field, as marshmallow reports them."""

    errors: dict
    message_id: str | None = None


class _Messages(fields.List):
    """The batch's messages. With ``"partial": true`` in the body a bad item becomes a ``RejectedItem``
    instead of failing the whole batch."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not (isinstance(data, dict) and data.get("partial") is True and isinstance(value, list)):
            return super()._deserialize(value, attr, data, **kwargs)
        out = []
        for item in value:
            try:
                out.append(self.inner.deserialize(item, **kwargs))
            except ValidationError as exc:
                given = item.get("message_id") if isinstance(item, dict) else None
                out.append(RejectedItem(exc.normalized_messages(), given if isinstance(given, str) else None))
        return out


class JsonBoolean(fields.Boolean):
    """A JSON ``true`` or ``false``, never ``1``/``0`` (equal to them in Python) or a string."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


class IngestRequestSchema(RequestSchema):
    messages = _Messages(
        fields.Nested(MessageSchema),
        required=True,
        validate=validate.Length(min=1, max=20_000),
        metadata={"description": "Every bad item is reported with its index and field."},
    )
    # Named ``partial_`` in Python because ``Schema.partial`` is a schema option; loaded as ``partial``.
    partial_ = JsonBoolean(
        data_key="partial",
        attribute="partial",
        load_default=False,
        metadata={
            "description": "Store the valid messages and report a status per item instead of refusing the batch."
        },
    )

    @validates_schema
    def _unique_ids(self, data: dict, **kwargs) -> None:
        seen: dict[str, str] = {}  # message_id NFKC form -> the first message_id with it
        repeated = {}
        for index, message in enumerate(data.get("messages", [])):
            if isinstance(message, RejectedItem):
                continue
            if (earlier := repeated_id(seen, message["message_id"])) is not None:
                note = repeated_id_note(message["message_id"], earlier)
                repeated[index] = {"message_id": [f"repeats an earlier message_id in this batch{note}"]}
        if repeated and not data.get("partial"):
            raise ValidationError({"messages": repeated})
        for index, errors in repeated.items():
            data["messages"][index] = RejectedItem(errors, data["messages"][index]["message_id"])


class ItemStatusSchema(Schema):
    index = fields.Integer(required=True, metadata={"description": "Position in the request's messages."})
    message_id = fields.Raw(allow_none=True)
    status = fields.String(
        required=True,
        validate=validate.OneOf(["stored", "updated", "queued", "rejected"]),
        metadata={
            "description": "stored (new or unchanged), updated (a stored message id with other content, "
            "replaced), queued, or rejected."
        },
    )
    errors = fields.Dict(allow_none=True, metadata={"description": "Why a rejected item was refused, by field."})


class IngestResponseSchema(Schema):
    memory_id = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(["done", "queued"]))
    messages = fields.Integer(required=True, metadata={"description": "Messages ingested or queued (valid ones)."})
    rejected = fields.Integer(metadata={"description": "Partial mode: messages refused."})
    statuses = fields.List(
        fields.Nested(ItemStatusSchema),
        metadata={"description": "Partial mode: a status per message, in request order."},
    )
    job_id = fields.String(allow_none=True, metadata={"description": "Set when the batch was queued (202)."})
    report = fields.Dict(allow_none=True, metadata={"description": "The ingest report, when done synchronously (200)."})


class JobSchema(Schema):
    job_id = fields.String(required=True)
    memory_id = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(["queued", "running", "done", "failed"]))
    messages = fields.Integer(required=True)
    progress = fields.Integer(metadata={"description": "Messages ingested so far."})
    created_at = fields.String(required=True)
    updated_at = fields.String(required=True)
    report = fields.Dict(allow_none=True)
    error = fields.String(allow_none=True)


# --- query -----------------------------------------------------------------------------------
class JsonNumber(fields.Float):
    """A JSON number (int or float), never a string or a boolean: ``"0.3"`` is refused as integers are."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


def _search_field(spec: SearchField) -> fields.Field:
    """The request field of one search setting: its type, bounds, choices and help from ``SearchConfig``."""
    metadata = {"description": spec.help}
    if spec.kind is bool:
        return JsonBoolean(metadata=metadata)
    if spec.kind is str:
        return fields.String(validate=validate.OneOf(spec.choices), metadata=metadata)
    bounds = validate.Range(*spec.bounds) if spec.bounds else None
    if spec.kind is int:
        return fields.Integer(strict=True, validate=bounds, metadata=metadata)
    return JsonNumber(validate=bounds, metadata=metadata)


QueryRequestSchema = RequestSchema.from_dict(
    {
        "query": Text(required=True, min_length=1, max_length=MAX_QUERY_CHARS, blank=False),
        **{name: _search_field(spec) for name, spec in SEARCH_FIELDS.items()},
    },
    name="QueryRequestSchema",
)  # a question and optional search-setting overrides (``hypermem.retrieve.config.SearchConfig``)


class PathStepSchema(PassThroughSchema):
    level = fields.String(
        required=True, metadata={"description": "query | topic | hyperedge | episode | fact | fused | turn"}
    )
    id = fields.String(allow_none=True)
    score = fields.Float(allow_none=True)
    weight = fields.Float(allow_none=True)


class EvidenceSchema(PassThroughSchema):
    """A retrieved topic, episode, fact (``id``) or turn (``dia_id``); other keys vary by level."""

    id = fields.String(metadata={"description": "Node id (topics, episodes, facts)."})
    dia_id = fields.String(metadata={"description": "Message id (turns)."})
    score = fields.Float(allow_none=True)
    path = fields.List(fields.Nested(PathStepSchema), metadata={"description": "How retrieval reached this item."})


class QueryResultSchema(Schema):
    query_id = fields.String(required=True)
    memory_id = fields.String(required=True)
    query = fields.String(required=True)
    created_at = fields.String(metadata={"description": "When the query ran (UTC, ISO 8601)."})
    analysis = fields.Dict(metadata={"description": "Query type, elements and dates found in the question."})
    config = fields.Dict(metadata={"description": "The search settings used."})
    topics = fields.List(fields.Nested(EvidenceSchema))
    episodes = fields.List(fields.Nested(EvidenceSchema))
    facts = fields.List(fields.Nested(EvidenceSchema))
    turns = fields.List(fields.Nested(EvidenceSchema))
    stop = fields.Dict(allow_none=True, metadata={"description": "The adaptive stopping decision."})
    rerank = fields.Dict(allow_none=True)
    selection = fields.Dict(allow_none=True)
    context = fields.String(allow_none=True)
    context_tokens = fields.Integer(allow_none=True)
    answer = fields.String(allow_none=True, metadata={"description": "Set when an LLM is configured."})
    timings_ms = fields.Dict(keys=fields.String(), values=fields.Float())
    truncated = fields.Boolean(
        metadata={
            "description": "Only on a stored explanation too large to keep whole (HYPERMEM_QUERY_RECORD_MAX_BYTES): "
            "true, and the evidence lists are empty."
        }
    )


# --- memories --------------------------------------------------------------------------------
class MemorySchema(Schema):
    memory_id = fields.String(required=True)
    created_at = fields.String(allow_none=True, metadata={"description": "When its owner first wrote to it."})
    counts = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={"description": "Nodes per label."})


class MemoryRefSchema(Schema):
    memory_id = fields.String(required=True)
    created_at = fields.String(allow_none=True)


class MemoryListSchema(Schema):
    memories = fields.List(fields.Nested(MemoryRefSchema), required=True)


class DeletedSchema(Schema):
    memory_id = fields.String(required=True)
    deleted_nodes = fields.Integer(required=True)


# --- browse ----------------------------------------------------------------------------------
class QueryInteger(fields.Integer):
    """An integer query parameter in ASCII digits, optionally after "-" (``?limit=5``): Python's ``int`` would also
    read ``+5``, `` 5``, ``５`` and ``٥``, which a client sends by mistake, not by intent."""

    _DIGITS = re.compile(r"-?[0-9]+")

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and not self._DIGITS.fullmatch(value):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class PageArgsSchema(RequestSchema):
    offset = QueryInteger(load_default=0, validate=validate.Range(0, browse.MAX_OFFSET))
    limit = QueryInteger(load_default=50, validate=validate.Range(1, browse.MAX_PAGE))


class EpisodeListArgsSchema(PageArgsSchema):
    order = fields.String(
        load_default="recent",
        validate=validate.OneOf(["recent", "oldest"]),
        metadata={"description": "recent: latest end first; oldest: earliest start first."},
    )


class TopicSummarySchema(Schema):
    id = fields.String(required=True)
    title = fields.String(allow_none=True)
    summary = fields.String(allow_none=True)
    episodes = fields.Integer(metadata={"description": "Episodes in the topic's hyperedge."})
    first = fields.String(allow_none=True, metadata={"description": "Start of its earliest episode."})
    last = fields.String(allow_none=True, metadata={"description": "End of its latest episode."})


class TopicListSchema(Schema):
    topics = fields.List(fields.Nested(TopicSummarySchema), required=True)


class EpisodeSummarySchema(Schema):
    id = fields.String(required=True)
    title = fields.String(allow_none=True)
    summary = fields.String(allow_none=True)
    session = fields.String(allow_none=True)
    start = fields.String(allow_none=True)
    end = fields.String(allow_none=True)
    participants = fields.List(fields.String())
    weight = fields.Float(allow_none=True, metadata={"description": "Membership weight in the topic hyperedge."})
    hyperedge_id = fields.String(allow_none=True)


class EpisodeListItemSchema(EpisodeSummarySchema):
    facts = fields.Integer(metadata={"description": "Facts in the episode's hyperedge."})


class EpisodeListSchema(Schema):
    episodes = fields.List(fields.Nested(EpisodeListItemSchema), required=True)


class TopicDetailSchema(Schema):
    id = fields.String(required=True)
    title = fields.String(allow_none=True)
    summary = fields.String(allow_none=True)
    episodes = fields.List(fields.Nested(EpisodeSummarySchema), required=True)


class FactSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(allow_none=True, metadata={"description": "fact | passage (a slice of a long turn)"})
    content = fields.String(allow_none=True)
    superseded_by = fields.String(allow_none=True, metadata={"description": "The later fact that replaced this one."})
    date = fields.String(allow_none=True)
    potential = fields.List(fields.String())
    keywords = fields.List(fields.String())
    weight = fields.Float(allow_none=True)
    hyperedge_id = fields.String(allow_none=True)
    turn_ids = fields.List(fields.String())


class TurnSchema(Schema):
    id = fields.String(required=True)
    dia_id = fields.String(allow_none=True)
    speaker = fields.String(allow_none=True)
    text = fields.String(allow_none=True)
    timestamp = fields.String(allow_none=True)
    session = fields.String(allow_none=True)
    seq = fields.Integer(allow_none=True)


class ElementSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(allow_none=True, metadata={"description": "Person | Time | Location"})
    name = fields.String(allow_none=True)
    value = fields.String(allow_none=True)
    weight = fields.Float(allow_none=True)
    hyperedge_id = fields.String(allow_none=True)


class EpisodeDetailSchema(EpisodeSummarySchema):
    facts = fields.List(fields.Nested(FactSchema), required=True)
    turns = fields.List(fields.Nested(TurnSchema), required=True)
    elements = fields.List(fields.Nested(ElementSchema), required=True)


class PersonSchema(Schema):
    id = fields.String(required=True)
    name = fields.String(allow_none=True)
    salience = fields.Float(allow_none=True)
    frequency = fields.Float(allow_none=True)
    episodes = fields.Integer()


class PeopleSchema(Schema):
    people = fields.List(fields.Nested(PersonSchema), required=True)


class TimelineArgsSchema(RequestSchema):
    start = fields.Date(
        data_key="from", load_default=None, metadata={"description": "First day (YYYY-MM-DD), inclusive."}
    )
    end = fields.Date(data_key="to", load_default=None, metadata={"description": "Last day (YYYY-MM-DD), inclusive."})

    @validates_schema
    def _ordered(self, data: dict, **kwargs) -> None:
        if data.get("start") and data.get("end") and data["start"] > data["end"]:
            raise ValidationError("must not be before 'from'", "to")


class TimelineItemSchema(Schema):
    kind = fields.String(required=True, metadata={"description": "episode | fact"})
    id = fields.String(required=True)
    date = fields.String(
        allow_none=True,
        metadata={"description": "YYYY-MM-DD (a fact dated only to a month or a year: YYYY-MM or YYYY)"},
    )
    start = fields.String(allow_none=True, metadata={"description": "an episode's first turn's timestamp"})
    title = fields.String(allow_none=True)
    text = fields.String(allow_none=True)
    episode_id = fields.String(allow_none=True)


class TimelineSchema(Schema):
    person = fields.String(required=True)
    items = fields.List(fields.Nested(TimelineItemSchema), required=True)


class HyperedgeArgsSchema(RequestSchema):
    node_id = Text(
        required=True,
        min_length=1,
        max_length=400,
        metadata={"description": "Id of a Topic, Episode, Fact or element."},
    )


class NodeRefSchema(Schema):
    id = fields.String(required=True)
    label = fields.String(allow_none=True)
    caption = fields.String(allow_none=True)
    weight = fields.Float(allow_none=True)


class HyperedgeSchema(Schema):
    id = fields.String(required=True)
    kind = fields.String(allow_none=True, metadata={"description": "topic | episode | segment"})
    role = fields.String(required=True, metadata={"description": "owner | member: how the node takes part."})
    weight = fields.Float(allow_none=True, metadata={"description": "The node's member weight (role member)."})
    owners = fields.List(fields.Nested(NodeRefSchema))
    members = fields.List(fields.Nested(NodeRefSchema))


class NodeHyperedgesSchema(Schema):
    node = fields.Nested(NodeRefSchema, required=True)
    hyperedges = fields.List(fields.Nested(HyperedgeSchema), required=True)


# --- tenants and keys ------------------------------------------------------------------------
class KeyCreatedSchema(Schema):
    tenant = fields.String(required=True)
    key_id = fields.String(required=True)
    key = fields.String(required=True, metadata={"description": "The bearer key. Shown once; only its hash is stored."})
    created_at = fields.String(required=True)


class KeyRevokedSchema(Schema):
    tenant = fields.String(required=True)
    key_id = fields.String(required=True)
    revoked = fields.Boolean(required=True)


class AssignArgsSchema(RequestSchema):
    transfer = fields.Boolean(
        load_default=False,
        metadata={"description": "Move a memory another tenant owns (its queries and jobs go with it); "
                                 "without it such a memory gets 409."},
    )  # fmt: skip


class AssignedSchema(Schema):
    tenant = fields.String(required=True)
    memory_id = fields.String(required=True)
    previous_owner = fields.String(allow_none=True, metadata={"description": "The tenant that owned it before."})


# --- probes ----------------------------------------------------------------------------------
class HealthSchema(Schema):
    status = fields.String(required=True)


class ReadySchema(Schema):
    status = fields.String(required=True)
    engine = fields.String(allow_none=True)
    embedding_model = fields.String(allow_none=True)
