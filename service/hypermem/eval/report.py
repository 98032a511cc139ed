"""Write a benchmark's ``results.json``, ``results.md`` (markdown tables) and ``recall_vs_turns.png``."""

from __future__ import annotations

import json
from pathlib import Path

from hypermem.eval.dataset import CATEGORIES, CATEGORY_NAMES

_COLUMNS = (
    ("evidence_recall", "recall", "{:.3f}"),
    ("precision", "precision", "{:.3f}"),
    ("turns_per_question", "turns/q", "{:.1f}"),
    ("context_tokens", "tokens/q", "{:.0f}"),
    ("p50_ms", "p50 ms", "{:.1f}"),
    ("p95_ms", "p95 ms", "{:.1f}"),
    ("questions", "n", "{}"),
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def markdown(results: dict) -> str:
    """The results as markdown: overall table, recall per category, dataset notes, QA scores if any."""
    systems = results["systems"]
    lines = ["# LoCoMo retrieval benchmark", ""]
    convs = results.get("conversations", {})
    if convs:
        lines += [f"Conversations: {', '.join(convs)}; questions per conversation limit: {results.get('limit')}.", ""]
    lines += ["## Overall", ""]
    lines += _table(
        ["system", *(label for _, label, _ in _COLUMNS)],
        [[name, *(fmt.format(s["overall"][key]) for key, _, fmt in _COLUMNS)] for name, s in systems.items()],
    )
    lines += ["", "## Evidence recall by category (turns/question)", ""]
    lines += _table(
        ["system", *(f"{c} {CATEGORY_NAMES[c]}" for c in CATEGORIES)],
        [
            [
                name,
                *(
                    f"{s['by_category'][str(c)]['evidence_recall']:.3f} ({s['by_category'][str(c)]['turns_per_question']:.1f})"
                    if str(c) in s["by_category"]
                    else "-"
                    for c in CATEGORIES
                ),
            ]
            for name, s in systems.items()
        ],
    )
    dataset = results.get("dataset")
    if dataset:
        unmatched = ", ".join(f"{u['sample_id']} q{u['question']} {u['id']}" for u in dataset["unmatched_evidence"]["ids"])
        malformed = ", ".join(f"{u['sample_id']} q{u['question']} {u['id']!r}" for u in dataset["malformed_evidence"]["ids"])
        lines += [
            "",
            "## Dataset",
            "",
            f"- questions: {dataset['questions']}, evidence ids: {dataset['evidence_ids']}, "
            f"without usable evidence (left out of recall): {dataset['questions_without_evidence']}, "
            f"integer answers: {dataset['integer_answers']}",
            f"- unmatched evidence ids ({dataset['unmatched_evidence']['count']}): {unmatched or 'none'}",
            f"- malformed evidence ids ({dataset['malformed_evidence']['count']}): {malformed or 'none'}",
        ]
    qa = results.get("qa")
    if qa:
        lines += ["", "## QA", ""]
        lines += _table(
            ["system", "F1", "BLEU-1", "judge (cat 1-4)", "judge runs", "n"],
            [
                [name, f"{q['f1']:.3f}", f"{q['bleu1']:.3f}", f"{q['judge']:.3f}", str(q["judge_runs"]), str(q["questions"])]
                for name, q in qa.items()
            ],
        )
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    """Scatter of overall evidence recall against returned turns per question (log x), one labelled point per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for name, s in results["systems"].items():
        x, y = max(s["overall"]["turns_per_question"], 0.1), s["overall"]["evidence_recall"]
        color = "tab:red" if name.startswith("hypermem") else ("tab:gray" if name == "full-context" else "tab:blue")
        ax.scatter([x], [y], color=color, s=60 if name == "hypermem" else 30, zorder=3)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("returned turns per question (log)")
    ax.set_ylabel("evidence recall")
    ax.set_title("LoCoMo: evidence recall vs returned turns")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(results: dict, out_dir: str | Path, qa_records: list[dict] | None = None) -> dict[str, Path]:
    """Write ``results.json``, ``results.md``, ``recall_vs_turns.png`` (and ``qa.jsonl`` given QA records)
    into ``out_dir`` (created if absent). Returns ``{"json", "md", "png"[, "qa"]}`` paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "md": out / "results.md", "png": out / "recall_vs_turns.png"}
    paths["json"].write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(markdown(results), encoding="utf-8")
    plot(results, paths["png"])
    if qa_records is not None:
        paths["qa"] = out / "qa.jsonl"
        paths["qa"].write_text("".join(json.dumps(r) + "\n" for r in qa_records), encoding="utf-8")
    return paths
