"""Write a benchmark's ``results.json``, ``results.md`` (markdown tables) and ``recall_vs_turns.png``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from hypermem.eval.dataset import CATEGORIES, CATEGORY_NAMES

_AT_K = re.compile(r"^(?P<family>[\w-]+)@(?P<k>\d+)$")

_COLUMNS = (
    ("evidence_recall", "recall", "{:.3f}"),
    ("precision", "precision", "{:.3f}"),
    ("turns_per_question", "turns/q", "{:.1f}"),
    ("context_tokens", "tokens/q", "{:.0f}"),
    ("p50_ms", "p50 ms", "{:.3g}"),  # 3 significant digits: the standalone baselines take well under 0.1 ms
    ("p95_ms", "p95 ms", "{:.3g}"),
    ("questions", "n", "{}"),
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def curves(results: dict) -> dict[str, list[tuple[float, float, str]]]:
    """Recall-vs-turns curves: ``{family: [(turns/question, recall, system), ...]}`` sorted by turns.

    A family is every ``NAME@K`` system (``bm25@3`` ... ``bm25@25``); the ``hypermem`` family also
    holds ``hypermem`` itself (its default turn budget).
    """
    out: dict[str, list[tuple[float, float, str]]] = {}
    for name, s in results["systems"].items():
        match = _AT_K.match(name)
        family = match["family"] if match else (name if name == "hypermem" else None)
        if family is None:
            continue
        out.setdefault(family, []).append((s["overall"]["turns_per_question"], s["overall"]["evidence_recall"], name))
    return {family: sorted(points) for family, points in out.items()}


def margin(results: dict, system: str = "hypermem") -> dict | None:
    """``system``'s recall minus the best baseline curve's recall at ``system``'s turns per question.

    Each baseline curve is linearly interpolated in turns (clamped at its ends). Returns
    ``{"system", "turns", "recall", "best_baseline", "baseline_recall", "margin"}``, or None
    without the system or any baseline curve.
    """
    if system not in results["systems"]:
        return None
    own = results["systems"][system]["overall"]
    turns, recall = own["turns_per_question"], own["evidence_recall"]
    best = None
    for family, points in curves(results).items():
        if family == "hypermem":
            continue
        at = float(np.interp(turns, [p[0] for p in points], [p[1] for p in points]))
        if best is None or at > best[1]:
            best = (family, at)
    if best is None:
        return None
    return {"system": system, "turns": round(turns, 3), "recall": round(recall, 4), "best_baseline": best[0],
            "baseline_recall": round(best[1], 4), "margin": round(recall - best[1], 4)}  # fmt: skip


def markdown(results: dict) -> str:
    """The results as markdown: overall table, recall per category, dataset notes, QA scores if any."""
    systems = results["systems"]
    lines = ["# LoCoMo retrieval benchmark", ""]
    convs = results.get("conversations", {})
    if convs:
        lines += [f"Conversations: {', '.join(convs)}; questions per conversation limit: {results.get('limit')}.", ""]
    lines += [
        "hypermem ranks turns with the turn ranker's shipped weights, fitted on the 7 LoCoMo dev conversations: on",
        "those conversations its numbers here are in-sample. `hypermem eval cv` gives the held-out ones.",
        "",
        "## Overall",
        "",
    ]
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
    gap = results.get("margin")
    if gap:
        lines += [
            "",
            "## Margin over the best standalone baseline at the same turns",
            "",
            f"{gap['system']}: recall {gap['recall']:.3f} at {gap['turns']:.1f} turns/question; best baseline "
            f"{gap['best_baseline']} interpolated to the same turns: {gap['baseline_recall']:.3f}; "
            f"margin {gap['margin']:+.3f}.",
        ]
    dataset = results.get("dataset")
    if dataset:
        unmatched = ", ".join(
            f"{u['sample_id']} q{u['question']} {u['id']}" for u in dataset["unmatched_evidence"]["ids"]
        )
        malformed = ", ".join(
            f"{u['sample_id']} q{u['question']} {u['id']!r}" for u in dataset["malformed_evidence"]["ids"]
        )
        lines += [
            "",
            "## Dataset",
            "",
            f"- in the file (before any --limit): questions: {dataset['questions']}, evidence ids: {dataset['evidence_ids']}, "
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
                [
                    name,
                    f"{q['f1']:.3f}",
                    f"{q['bleu1']:.3f}",
                    f"{q['judge']:.3f}",
                    str(q["judge_runs"]),
                    str(q["questions"]),
                ]
                for name, q in qa.items()
            ],
        )
    return "\n".join(lines) + "\n"


_LABEL_OFFSET = (5.0, 4.0)  # a point's label, in points: right of and above it
_LABEL_WIDTH = 80.0  # points a label is taken to span to its right (for overlap)


def _label_offsets(ax, points: list[tuple[float, float]], step: float = 10.0) -> list[tuple[float, float]]:
    """Offsets in points (``_LABEL_OFFSET`` by default) so that no two labels overlap: a label that would land within
    ``step`` points of one placed before (and within ``_LABEL_WIDTH`` across) moves down by ``step`` until free.
    Ablations sit close together on the recall-vs-turns plot; their labels were drawn on top of each other."""
    scale = ax.figure.dpi / 72.0  # display pixels per point
    dx, dy0 = _LABEL_OFFSET
    placed: list[tuple[float, float]] = []  # label anchors, display pixels
    offsets = []
    for x, y in points:
        px, py = ax.transData.transform((x, y))
        lx, dy = px + dx * scale, dy0
        while any(
            abs(lx - ox) < _LABEL_WIDTH * scale and abs(py + dy * scale - oy) < step * scale for ox, oy in placed
        ):
            dy -= step
        placed.append((lx, py + dy * scale))
        offsets.append((dx, dy))
    return offsets


def plot(results: dict, path: Path) -> None:
    """Overall evidence recall against returned turns per question (log x): one line per
    recall-vs-turns curve (``curves``), one labelled point per other system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    lines = curves(results)
    on_curve = {p[2] for points in lines.values() for p in points}
    for family, points in lines.items():
        color = "tab:red" if family == "hypermem" else None
        ax.plot([max(p[0], 0.1) for p in points], [p[1] for p in points], marker="o", ms=4, label=family,
                color=color, lw=2.2 if family == "hypermem" else 1.2, zorder=4 if family == "hypermem" else 3)  # fmt: skip
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    labelled = [(name, max(s["overall"]["turns_per_question"], 0.1), s["overall"]["evidence_recall"])
                for name, s in results["systems"].items() if name not in on_curve]  # fmt: skip
    for name, x, y in labelled:
        color = "tab:red" if name.startswith("hypermem") else ("tab:gray" if name == "full-context" else "tab:blue")
        ax.scatter([x], [y], color=color, s=60 if name == "hypermem" else 30, zorder=3)
    ax.set_xlim(*ax.get_xlim())  # fixed now, so that the labels' display positions hold
    for (name, x, y), offset in zip(labelled, _label_offsets(ax, [(x, y) for _, x, y in labelled])):
        leader = {"arrowstyle": "-", "lw": 0.5, "color": "0.5"} if offset != _LABEL_OFFSET else None
        ax.annotate(name, (x, y), textcoords="offset points", xytext=offset, fontsize=8, arrowprops=leader)
    ax.set_xlabel("returned turns per question (log)")
    ax.set_ylabel("evidence recall")
    ax.set_title("LoCoMo: evidence recall vs returned turns")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
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
