"""Read LoCoMo-format conversations (Maharana et al., ACL 2024) into plain dataclasses.

Only the dialogue is read: ``event_summary``, ``session_summary`` and ``observation``
are the benchmark's annotations and never reach the memory. Sessions are found by
their turn lists (``session_N``), not by the date keys (conv-26 has 35 date keys and
19 sessions). A turn's ``blip_caption`` (a shared photo) is kept as text.

Errors: ``LocomoFormatError`` naming the conversation, session and field.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from dateutil import parser as date_parser

from hypermem.errors import HypermemError
from hypermem.model import EARLIEST_YEAR, LATEST_YEAR, Conversation, Message
from hypermem.store.ids import repeated_id, repeated_id_note
from hypermem.text import abbreviated

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_YEAR = re.compile(r"(?<!\d)\d{4}(?!\d)")


class LocomoFormatError(HypermemError, ValueError):
    """The file is not LoCoMo-shaped. ``problems`` lists every problem found, each naming its field
    (``"conv-26.session_2[3].speaker: missing or not a string"``); the message is the first (and how many more)."""

    def __init__(self, problem: str, *more: str):
        self.problems = [problem, *more]
        super().__init__(problem + (f" (and {len(more)} more)" if more else ""))


def parse_session_date(value: str, where: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"``: a day, a month and a year (``EARLIEST_YEAR``-``LATEST_YEAR``), the time optional.
    Raises ``LocomoFormatError`` naming ``where`` for anything less (``"5"``, ``"in 3 days"``, ``"2023"`` would
    otherwise take the missing parts from today)."""
    text = value.replace(" on ", " ")
    try:
        # Parsed against two different defaults: a part the text lacks shows up as a difference.
        first = date_parser.parse(text, fuzzy=True, default=datetime(2000, 1, 1))
        second = date_parser.parse(text, fuzzy=True, default=datetime(2001, 2, 2))
    except (ValueError, OverflowError, TypeError) as exc:
        raise LocomoFormatError(f"{where}: cannot parse date {value!r}") from exc
    if first.date() != second.date():
        raise LocomoFormatError(f"{where}: cannot parse date {value!r}: it needs a day, a month and a year")
    if not EARLIEST_YEAR <= first.year <= LATEST_YEAR:
        raise LocomoFormatError(f"{where}: date {value!r} is outside the years {EARLIEST_YEAR}-{LATEST_YEAR}")
    if str(first.year) not in _YEAR.findall(text):  # "0001" and "23" would read as 2001 and 2023
        raise LocomoFormatError(
            f"{where}: date {value!r} needs its year in four digits, within {EARLIEST_YEAR}-{LATEST_YEAR}"
        )
    return first


def conversation_from_record(record: dict) -> Conversation:
    """One LoCoMo record (``{"sample_id", "conversation": {...}, ...}``) as a Conversation.

    Raises ``LocomoFormatError`` naming the field, with every bad session and turn of the record; a record with no
    turn at all is refused (it would be reported ingested and leave no memory)."""
    sample_id = record.get("sample_id")
    if not isinstance(sample_id, str):
        raise LocomoFormatError("sample_id: missing or not a string")
    if not sample_id:
        raise LocomoFormatError("sample_id: empty")
    conv = record.get("conversation")
    if not isinstance(conv, dict):
        raise LocomoFormatError(f"{sample_id}.conversation: missing or not an object")
    speakers = [conv[k] for k in ("speaker_a", "speaker_b") if isinstance(conv.get(k), str)]
    problems: list[str] = []
    sessions = []
    for key in conv:
        if m := _SESSION_KEY.match(key):
            if isinstance(conv[key], list):
                sessions.append((int(m.group(1)), key))
            else:
                problems.append(f"{sample_id}.{key}: expected a list of turns")
    sessions.sort()
    out = Conversation(sample_id=sample_id, speakers=speakers)
    first_at: dict[str, str] = {}  # dia_id -> where it first appears
    first_id: dict[str, str] = {}  # dia_id NFKC form -> the first dia_id with it (``ids.repeated_id``)
    for number, key in sessions:
        try:
            when = _session_date(conv, sample_id, key)
        except LocomoFormatError as exc:
            problems.extend(exc.problems)
            when = None  # its turns are still checked
        for index, turn in enumerate(conv[key]):
            where = f"{sample_id}.{key}[{index}]"
            if problem := _turn_problem(turn, where, first_id, first_at):
                problems.append(problem)
                continue
            first_at[turn["dia_id"]] = where
            if when is not None:
                out.messages.append(
                    Message(
                        message_id=turn["dia_id"],
                        speaker=turn["speaker"],
                        text=turn["text"],
                        timestamp=when,
                        session_id=str(number),
                        image_caption=turn.get("blip_caption") or None,
                    )
                )
    if problems:
        raise LocomoFormatError(*problems)
    if not out.messages:
        raise LocomoFormatError(f"{sample_id}.conversation: no sessions (no session_N list with a turn)")
    return out


def _session_date(conv: dict, sample_id: str, key: str) -> datetime:
    """The date of session ``key`` (``session_N``) from its ``session_N_date_time``; ``LocomoFormatError`` naming it."""
    date_key = f"{key}_date_time"
    if date_key not in conv:
        raise LocomoFormatError(f"{sample_id}.{date_key}: missing")
    if not isinstance(conv[date_key], str):
        raise LocomoFormatError(
            f"{sample_id}.{date_key}: expected a string such as '1:56 pm on 8 May, 2023', "
            f"got {type(conv[date_key]).__name__}"
        )
    return parse_session_date(conv[date_key], f"{sample_id}.{date_key}")


def _turn_problem(turn: object, where: str, first_id: dict[str, str], first_at: dict[str, str]) -> str | None:
    """What is wrong with ``turn`` (at ``where``) as a LoCoMo turn, naming the field; None when nothing is.
    ``first_id`` and ``first_at`` hold the dia_ids seen before it (``conversation_from_record``)."""
    if not isinstance(turn, dict):
        return f"{where}: expected an object (a turn), got {type(turn).__name__}"
    for name in ("dia_id", "speaker", "text"):
        if not isinstance(turn.get(name), str):
            return f"{where}.{name}: missing or not a string"
    if (earlier := repeated_id(first_id, turn["dia_id"])) is not None:
        return f"{where}.dia_id: {turn['dia_id']!r} is also {first_at[earlier]}.dia_id" + repeated_id_note(
            turn["dia_id"], earlier
        )
    return None


#: The ingest's input fields (``check_input``) as LoCoMo names them.
_LOCOMO_NAMES = {"message_id": "dia_id", "image_caption": "blip_caption"}
_MESSAGE_FIELD = re.compile(r"^messages\[(\d+)\]\.(\w+)$")


def locomo_field(conversation: Conversation, field: str) -> str:
    """Where in the LoCoMo file an ingest input field of ``conversation`` (a loaded one) came from.

    ``messages[7].message_id`` (``check_input``'s name) -> ``conv-26.session_2[3].dia_id``; ``memory_id`` ->
    ``sample_id 'conv 26'``; anything else is returned under the conversation's sample_id."""
    shown = abbreviated(conversation.sample_id)
    if field == "memory_id":
        return f"sample_id {shown!r}"
    match = _MESSAGE_FIELD.match(field)
    if not match:
        return f"{shown}: {field}"
    index, name = int(match.group(1)), match.group(2)
    session = conversation.messages[index].session_id
    position = sum(m.session_id == session for m in conversation.messages[:index])
    return f"{shown}.session_{session}[{position}].{_LOCOMO_NAMES.get(name, name)}"


def not_a_file(path: Path) -> str:
    """Why ``path`` (not a regular file) cannot be read as one: "no such file", "a directory" or "not a regular file"."""
    return "a directory" if path.is_dir() else "not a regular file" if path.exists() else "no such file"


def load_locomo(path: str | Path, conversations: list[str] | None = None) -> list[Conversation]:
    """Load a LoCoMo JSON file (a list of records), optionally only the named ``sample_id``s.

    Raises ``LocomoFormatError`` (no such file, bad JSON or shape: an entry that is no object or has no
    ``conversation`` or no string ``sample_id`` is named by its index; unknown or duplicate sample_id; a
    conversation without a turn), before anything is ingested; its ``problems`` hold every bad session and turn of
    the conversations asked for.
    """
    file = Path(path)
    if not file.is_file():
        raise LocomoFormatError(f"PATH {str(path)!r}: {not_a_file(file)}")
    try:
        data = json.loads(file.read_text(encoding="utf-8-sig"))  # a leading byte-order mark is allowed
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LocomoFormatError(f"{path}: not valid JSON ({exc})") from exc
    except RecursionError as exc:  # "[[[[…" nested past Python's recursion limit
        raise LocomoFormatError(f"{path}: JSON nested too deeply to read") from exc
    single = isinstance(data, dict)  # one conversation, not a list of them: its errors name no index
    if single:
        data = [data]
    if not isinstance(data, list):
        raise LocomoFormatError(f"{path}: expected a list of conversations")
    records: dict[str, dict] = {}
    for index, record in enumerate(data):
        where = str(path) if single else f"{path}[{index}]"
        if not isinstance(record, dict):
            raise LocomoFormatError(f"{where}: expected an object (a conversation), got {type(record).__name__}")
        if "conversation" not in record:
            raise LocomoFormatError(f"{where}: not a LoCoMo conversation (no 'conversation' field)")
        sample_id = record.get("sample_id")
        if not isinstance(sample_id, str):
            raise LocomoFormatError(f"{where}.sample_id: missing or not a string")
        if not sample_id:
            raise LocomoFormatError(f"{where}.sample_id: empty")
        if sample_id in records:
            raise LocomoFormatError(f"{path}: sample_id {sample_id!r} appears more than once")
        records[sample_id] = record
    if not records:
        raise LocomoFormatError(f"{path}: holds no conversation")
    wanted = conversations or list(records)
    unknown = [c for c in wanted if c not in records]
    if unknown:
        raise LocomoFormatError(f"--conversation: unknown sample_id {unknown}; the file has {sorted(records)}")
    loaded, problems = [], []
    for sample_id in wanted:
        try:
            loaded.append(conversation_from_record(records[sample_id]))
        except LocomoFormatError as exc:
            problems.extend(exc.problems)
    if problems:
        raise LocomoFormatError(*problems)
    return loaded
