"""The LoCoMo benchmark (issue 5): ``hypermem eval locomo PATH [--conversation ID]... --out DIR [--qa]``.

- ``dataset``: the questions and their gold evidence, with the dataset's quirks repaired or reported;
- ``systems``: hypermem, its ablations and turn budgets; standalone BM25/dense/RRF turn baselines (``baselines``); full context;
- ``cv``: leave-one-conversation-out tuning of a small grid, parts measured on held-out folds;
- ``metrics``: evidence recall/precision, turns, tokens, latency percentiles; LoCoMo token F1 and BLEU-1;
- ``benchmark``: ingest if needed, run every question through every system;
- ``qa``: answer from a system's context and score (F1, BLEU-1, 3-run LLM judge) with an LLM;
- ``report``: ``results.json``, ``results.md``, ``recall_vs_turns.png`` (and ``qa.jsonl``).

All 7 dev conversations in one command (the store comes from ``HYPERMEM_STORE``)::

    hypermem eval locomo ../shared/data/locomo-dev.json --out eval-out
"""
