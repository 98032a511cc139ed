"""CPU seconds of the annotation worker's stages (``hypermem.ingest.annotate``) over LoCoMo dev, by stage.

    python bench/bench_annotation.py [--data ../shared/data/locomo-dev.json] [--rounds 3]

The worker runs spaCy NER over the pieces of each turn's prose that could name an element
(``elements.ner_pieces``), then the date and name rules, and YAKE keywords of every turn
(``yake_core``), in a process of its own beside the turn embedding, so its CPU seconds are what an ingest
spends beyond the embedding there (``bench/bench_ingest.py`` prints them as "annotation worker"). This
script runs the same calls in this process on one thread, conversation by conversation as an ingest
hands them over, and prints the best of ``--rounds`` per stage (CPU seconds: the machine's load barely
moves them), with the spaCy and thinc versions and a digest of what each stage found, so a change of
library or gate that finds something else shows. Issue 13 measured spaCy 3.8.7 against 3.8.18 with it.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import spacy
import thinc

from hypermem.cpu import single_thread_blas
from hypermem.ingest.elements import ElementExtractor, ner_pieces
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.locomo import load_locomo
from hypermem.ingest.passages import prose_of

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"


def digest(value: object) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=5).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each stage prints its best (default 3)")
    args = parser.parse_args()
    single_thread_blas()  # as in the worker (hypermem.ingest.annotate)
    conversations = load_locomo(args.data)
    extractor, keywords = ElementExtractor(), KeywordExtractor(cache_size=0)
    if extractor._nlp is None:
        raise SystemExit(f"error: spacy_model: {extractor.spacy_model} is not installed")
    inputs = [
        ([m.text for m in c.messages], [m.timestamp for m in c.messages], frozenset(c.speakers)) for c in conversations
    ]
    pieces = [[piece for text in texts for _, piece in ner_pieces(prose_of(text))] for texts, _, _ in inputs]
    turns = sum(len(texts) for texts, _, _ in inputs)
    print(f"spaCy {spacy.__version__}, thinc {thinc.__version__}; {len(conversations)} conversations, {turns} turns, "
          f"{sum(map(len, pieces))} NER pieces")  # fmt: skip
    extractor.extract(*inputs[0])  # warm: the first call compiles dateparser's patterns
    best = {"NER (nlp.pipe over the pieces)": 9e9, "elements (NER + rules + dates)": 9e9, "keywords (YAKE)": 9e9}
    found: dict[str, str] = {}
    for _ in range(args.rounds):
        start = time.process_time()
        entities = [
            [(e.text, e.label_) for d in extractor._nlp.pipe(p, batch_size=256) for e in d.ents] for p in pieces
        ]
        ner = time.process_time()
        elements = [extractor.extract(*arguments) for arguments in inputs]
        extract = time.process_time()
        phrases = [keywords.top(prose_of(text), 5) for texts, _, _ in inputs for text in texts]
        done = time.process_time()
        for name, seconds, value in zip(
            best, (ner - start, extract - ner, done - extract), (entities, elements, phrases)
        ):
            best[name] = min(best[name], seconds)
            found[name] = digest(value)
    print(f"CPU seconds per round (best of {args.rounds}), one thread:")
    for name, seconds in best.items():
        print(f"  {name:34} {seconds:6.2f}   found: {found[name]}")
    print(f"annotation CPU seconds per round {best['elements (NER + rules + dates)'] + best['keywords (YAKE)']:.2f}")


if __name__ == "__main__":
    main()
