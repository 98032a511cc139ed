"""Unique keys from user text: what goes into a node ``id`` never is the raw text.

Every uniquely constrained ``id`` is ``"{memory_id}/{kind}/{key}"`` (``hypermem.model.node_id``).
``key(value)`` turns a message id, session id, speaker or element name into a key that:

- is a safe token (1-64 of ``[A-Za-z0-9_.:#-]``, starting with a letter or digit) kept as is, so
  LoCoMo's ``D1:3`` stays readable in ``conv-26/turn/D1:3``, or the safe token a value's normal form is (``normalise``:
  NFKC without the characters that show nothing, so ``"Ａ１"`` and ``"A1\\u200d"`` are ``"A1"``: ids equal so are one
  id, as a batch refusing both says: ``repeated_id``);
- is otherwise ``~`` + the first 20 hex digits (80 bits) of the BLAKE2b digest of the normal form
  (``~`` is outside the safe alphabet, so a digest key never equals a kept token).

Keys therefore hold no whitespace, control character, markup or surrogate. That closes FalkorDB
4.16.3's SIGSEGV in ``EnforceUniqueEntity`` on a unique value ending in whitespace (issue 9 §1) and
any similar engine bug on odd bytes. The human-readable text stays in non-key properties
(``dia_id``, ``session``, ``speaker``, ``name``). The same value always gives the same key, so
ingest stays idempotent by message id.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:#-]{0,63}")
DIGEST_HEX = 20


# Unicode's Default_Ignorable_Code_Point characters (DerivedCoreProperties.txt): shown as nothing, so two values
# that differ only by them read alike. An identifier refuses most of them (``hypermem.text``); the joiners and the
# variation selectors it keeps ("❤️ Mom"), and a key drops them: "A1\u200d" is "A1", "❤️ Mom" is "❤ Mom".
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def normalise(value: str) -> str:
    """NFKC form without default-ignorable characters (``_IGNORABLE``), surrogates replaced (so any str hashes), for
    keys and name matching."""
    readable = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return unicodedata.normalize("NFKC", _IGNORABLE.sub("", readable))


def key(value: str) -> str:
    """A unique-key-safe form of ``value``: the value itself when it is a safe token, else its normal form
    (``normalise``) when that is one, else ``~`` + digest of its normal form."""
    if SAFE_KEY.fullmatch(value):
        return value
    normal = normalise(value)
    if SAFE_KEY.fullmatch(normal):
        return normal
    digest = hashlib.blake2b(normal.encode("utf-8"), digest_size=DIGEST_HEX // 2).hexdigest()
    return f"~{digest}"


def repeated_id(seen: dict[str, str], value: str) -> str | None:
    """The value recorded in ``seen`` (normal form -> first value) under ``value``'s normal form, or None after
    recording ``value``. Two ids with one normal form (``normalise``) are refused together in a batch: they are one key (``key``: "Ａ b" and
    "A b", "id5" and "ｉｄ５"), so one would overwrite the other."""
    found = normalise(value)
    if found in seen:
        return seen[found]
    seen[found] = value
    return None


def repeated_id_note(value: str, earlier: str) -> str:
    """What to add to a "repeated id" message when ``value`` repeats ``earlier`` only after normalisation."""
    if value == earlier:
        return ""
    nfkc = unicodedata.normalize("NFKC", value) == unicodedata.normalize("NFKC", earlier)
    how = "Unicode NFKC normalisation" if nfkc else "Unicode NFKC normalisation, with invisible characters dropped"
    return f" ({value!a} is the same id as {earlier!a} after {how})"


def name_key(name: str) -> str:
    """The key of an element name: case- and space-insensitive (``"Dark  Mode"`` = ``"dark mode"``)."""
    return key(" ".join(normalise(name).casefold().split()))


def term_id(memory_id: str, word: str) -> str:
    """The unique ``id`` of a word's Term node in a memory's vocabulary (``hypermem.vocabulary``):
    ``"{memory_id}/term/" + key(word)``."""
    return f"{memory_id}/term/{key(word)}"


def word_vector_id(embed_key: str) -> str:
    """The unique ``id`` of the store-wide ``WordVector`` node of a word under a model (``hypermem.vocabulary``):
    ``"~word/" + embed_key`` (``Embedder.text_key``: 32 hex digits; ``~`` is in no memory id, so the id is no
    memory's)."""
    return f"~word/{embed_key}"


def corpus_stats_id(memory_id: str, label: str) -> str:
    """The unique ``id`` of a memory's ``CorpusStats`` node of a searched label (``GraphStore.refresh_corpus_stats``):
    ``"{memory_id}/corpus_stats/{label}"``."""
    return f"{memory_id}/corpus_stats/{label}"
