"""The ``hypermem`` command line: ingest, query, eval, serve, doctor.

Everything printed for reading (tables, context, errors) shows control characters as ``\\xNN``
(``hypermem.text.visible``); ``--json`` output is exact JSON. A character the console's encoding cannot hold
(``PYTHONIOENCODING=ascii``, a C locale) is printed as an escape (``\\xfc``), never an error (``run``).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperCommand

from hypermem.retrieve.config import SEARCH_FIELDS
from hypermem.text import abbreviated, visible

if TYPE_CHECKING:
    from hypermem.retrieve.result import QueryResult
    from hypermem.service import MemoryService


class _Command(TyperCommand):
    """A command whose usage line names a required argument as usage lines do (``query [OPTIONS] QUESTION``), not
    in typer's braces (``{QUESTION}``)."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        return [re.sub(r"^\{(.+)\}$", r"\1", piece) for piece in super().collect_usage_pieces(ctx)]


class _Typer(typer.Typer):
    """``typer.Typer`` whose commands are ``_Command``s."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)


app = _Typer(help="hypermem: a hypergraph memory for long-term conversational agents.", no_args_is_help=True)
ingest_app = _Typer(help="Ingest conversations into memory.", no_args_is_help=True)
eval_app = _Typer(help="Measure retrieval quality.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(eval_app, name="eval")


def run() -> None:
    """Console entry point: known user errors print a line naming the field (one per problem: ``_echo_error``) and
    exit 2, without a traceback.

    A reader that closes stdout early (``hypermem query … | head -1``) ends the command quietly with 0. stdout and
    stderr write a character their encoding cannot hold as an escape (``\\xfc``, ``\\u4e2d``), not an error.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    stdout, was_devnull = sys.stdout, _is_devnull(1)
    try:
        try:
            _run_app()
        finally:
            sys.stdout.flush()  # a reader gone away shows here, not in the interpreter's exit flush
    except BrokenPipeError:
        _stdout_closed()
    except KeyboardInterrupt:  # Ctrl-C outside typer's own handling
        _interrupted()
    except SystemExit as exit_:
        if exit_.code == INTERRUPTED:  # typer turns Ctrl-C into a silent exit 130: say so
            _interrupted()
        # click (wraps stdout) or rich (points fd 1 at devnull) met the closed pipe first; both exit 1
        if sys.stdout is not stdout or (not was_devnull and _is_devnull(1)):
            _stdout_closed()
        raise


INTERRUPTED = 130  # the shell's exit status for SIGINT


def _interrupted() -> None:
    """Ctrl-C: one line, exit 130 (an ingest is completed by running it again: its sessions are marked last)."""
    print("interrupted", file=sys.__stderr__, flush=True)  # not sys.stderr: a progress display may still wrap it
    raise SystemExit(INTERRUPTED) from None


def _is_devnull(fd: int) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(os.devnull))
    except OSError:
        return False


def _stdout_closed() -> None:
    """Exit 0 after stdout's reader went away; stdout points at devnull so no exit flush fails
    (the Python documentation's recipe, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(0)


def _run_app() -> None:
    """The typer app, with known user errors as one line on stderr and exit 2."""
    from pydantic import ValidationError

    from hypermem.config import setting_problems
    from hypermem.embed import EmbeddingModelError
    from hypermem.ingest.locomo import LocomoFormatError
    from hypermem.ingest.turns import IngestInputError
    from hypermem.retrieve.pipeline import QueryError
    from hypermem.store import StoreError

    if not (
        sys.stdout.isatty() and sys.stderr.isatty()
    ):  # piped or logged: click's plain "Error: …" lines instead of rich panels
        app.rich_markup_mode = None
    try:
        app()
    except (IngestInputError, LocomoFormatError, QueryError, StoreError, EmbeddingModelError, OSError) as exc:
        _echo_error(exc)
        raise SystemExit(2) from None
    except ValidationError as exc:
        typer.echo(visible(f"error: bad setting: {setting_problems(exc)}", one_line=True), err=True)
        raise SystemExit(2) from None


SHOWN_PROBLEMS = 20  # an input error with more problems shows this many, then how many more


def _echo_error(exc: Exception) -> None:
    """``error: …`` on stderr, one line (control characters escaped) per problem of an input error that lists them
    (``IngestInputError``, ``LocomoFormatError``: the first ``SHOWN_PROBLEMS``, then how many more)."""
    from hypermem.ingest.locomo import LocomoFormatError
    from hypermem.ingest.turns import IngestInputError

    if isinstance(exc, IngestInputError):
        problems = [f"{field}: {problem}" for field, problem in exc.problems]
    elif isinstance(exc, LocomoFormatError):
        problems = exc.problems
    else:
        problems = [str(exc)]
    for problem in problems[:SHOWN_PROBLEMS]:
        typer.echo(visible(f"error: {problem}", one_line=True), err=True)
    if len(problems) > SHOWN_PROBLEMS:
        typer.echo(f"error: and {len(problems) - SHOWN_PROBLEMS} more ({len(problems)} problems)", err=True)


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _plain_record(record: logging.LogRecord) -> bool:
    """A log filter for a stderr that is not a terminal: drops colour codes (werkzeug's banner and
    request lines) and shows any other control character as ``\\xNN``."""
    record.msg, record.args = visible(_SGR.sub("", record.getMessage())), None
    return True


def _print_version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version

        typer.echo(f"hypermem {version('hypermem')}")
        raise typer.Exit()


@app.callback()
def main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level."),
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if not verbose:
        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each index build at DEBUG
        # The Neo4j driver logs a failed connection at ERROR before raising it; the store's error says the same.
        logging.getLogger("neo4j").setLevel(logging.CRITICAL)
    if not sys.stderr.isatty():
        for handler in logging.getLogger().handlers:
            handler.addFilter(_plain_record)


SAMPLE_QUESTION = "When did Tomas start volunteering at the community garden?"


def _sample_path() -> str:
    from importlib import resources

    return str(resources.files("hypermem.samples").joinpath("sample-conversation.json"))


@contextmanager
def _open_service(llm: bool | None, *, existing: bool = False) -> Iterator[MemoryService]:
    """``with _open_service(llm) as svc:`` a MemoryService from the environment's settings; exits 2 with a message
    when ``--llm`` has no LLM, and with ``existing`` (a command that only reads or deletes) when the embedded store's
    directory does not exist.

    From the block's end, or from where it calls ``_work_done`` (its work complete, before it reports it), Ctrl-C is
    ignored until the service is closed; then the handler it found is back. A block that fails or is interrupted
    closes the service as usual."""
    from hypermem.config import Settings
    from hypermem.service import MemoryService
    from hypermem.store import check_store_exists

    settings = Settings()
    if llm and not settings.llm_enabled:
        typer.echo("error: --llm needs an LLM: set HYPERMEM_LLM_BASE_URL (and HYPERMEM_LLM_MODEL).", err=True)
        raise typer.Exit(2)
    if existing:
        check_store_exists(settings.store)
    previous = signal.getsignal(signal.SIGINT)
    service = MemoryService.open(settings, use_llm=llm)
    try:
        try:
            yield service
        except BaseException:
            service.close()
            raise
        _work_done()
        service.close()
    finally:
        signal.signal(signal.SIGINT, previous)


def _work_done() -> None:
    """The command's work is complete: Ctrl-C is ignored until its ``_open_service`` block ends. What is left is
    its report and the cleanup (stopping the embedded FalkorDB, which flushes its log: seconds): an interrupt there
    would only cut the cleanup short and turn a finished job into a failure (exit 130)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _confirmed(question: str) -> bool:
    """``typer.confirm``, with no answer (end of input: ``< /dev/null``, a closed pipe) as no."""
    try:
        return typer.confirm(question)
    except typer.Abort:
        typer.echo()  # end the prompt's line: no answer was typed after it
        return False


def _show_markdown(console, text: str) -> None:
    """Markdown rendered on a terminal; elsewhere (a pipe, a file) the Markdown text itself, lines whole."""
    from rich.markdown import Markdown

    if console.is_terminal:
        console.print(Markdown(text))
    else:
        console.file.write(text.rstrip("\n") + "\n")


def _show_table(console, title: str, headers: list[str], rows: list[list[str]]) -> None:
    """A rich table on a terminal; elsewhere (a pipe, a file) plain tab-separated lines with whole
    headers, one line per row (whitespace inside a cell becomes one space)."""
    from rich.table import Table

    rows = [[visible(str(cell)) for cell in row] for row in rows]
    if console.is_terminal:
        table = Table(*headers, title=title)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    console.file.write(f"# {title}\n")
    for row in [headers, *rows]:
        console.file.write("\t".join(" ".join(str(cell).split()) for cell in row) + "\n")


REPORT_COLUMNS = ("turns", "episodes", "topics", "facts", "persons", "times", "locations", "hyperedges")


def _load_locomo(path: str, conversations: list[str] | None) -> list:
    """The conversations of LoCoMo file ``path`` (``conversations``: sample_ids, default all), or exit 2 with what is
    wrong with the file (before any store is opened)."""
    from hypermem.ingest.locomo import LocomoFormatError, load_locomo

    try:
        return load_locomo(path, list(dict.fromkeys(conversations)) if conversations else None)
    except (OSError, LocomoFormatError) as exc:
        _echo_error(exc)
        raise typer.Exit(2) from exc


def _ingest_locomo(svc, convs: list, console) -> list:
    """Ingest conversations (``_load_locomo``) with a progress bar on ``console`` (a terminal only); returns the
    IngestReports."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hypermem.ingest.locomo import locomo_field
    from hypermem.ingest.pipeline import check_input
    from hypermem.ingest.turns import IngestInputError

    problems = []  # every conversation is checked before any is stored: a bad file stores nothing
    for conv in convs:
        try:
            check_input(conv.sample_id, conv.messages, svc.settings.max_message_chars)
        except IngestInputError as exc:
            problems += [(locomo_field(conv, field), problem) for field, problem in exc.problems]
    if problems:
        raise IngestInputError(*problems[0], problems)
    reports = []
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("turns"),
        TimeElapsedColumn(),
    ]
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        for conv in convs:
            task = progress.add_task(conv.sample_id, total=len(conv.messages))
            report = svc.ingest_conversation(conv, progress=lambda n, task=task: progress.advance(task, n))
            progress.update(task, completed=len(conv.messages))
            reports.append(report)
    return reports


def _print_reports(svc, reports: list, console) -> None:
    """Counts per conversation as a table on ``console``."""
    from hypermem.store import shown_url

    rows = [[r.memory_id, *(str(getattr(r, f)) for f in REPORT_COLUMNS), f"{r.sessions_ingested}/{r.sessions_skipped}",
             f"{r.elapsed_s:.1f}"] for r in reports]  # fmt: skip
    _show_table(console, "ingested", ["conversation", *REPORT_COLUMNS, "sessions new/skipped", "seconds"], rows)
    console.print(f"LLM: {'on' if svc.llm is not None else 'off (no-LLM path)'}; store: {shown_url(svc.settings.store)}",
                  markup=False, highlight=False, soft_wrap=True)  # fmt: skip


def _step_text(step) -> str:
    """One step of a turn's explanation path for the table: ``fused(0.090)``, ``hyperedge(w=0.81)``, and why a
    turn was put first out of score order (``fused(0.090, exact match)``: ``turn_ranker.exact_match``)."""
    parts = [
        f"{step.score:.3f}" if step.score is not None else f"w={step.weight:.2f}" if step.weight is not None else ""
    ]
    if step.level == "fused" and step.via == "exact_match":
        parts.append("exact match")
    shown = ", ".join(p for p in parts if p)
    return f"{step.level}({shown})" if shown else step.level


def _path_text(path: list) -> str:
    """A turn's explanation path for the table, between the query and the turn (``_step_text``), and for a reply (it
    follows its question, with the question's score and path) ``-> reply to D15:25``."""
    text = " -> ".join(_step_text(step) for step in path[1:-1])
    if path and path[-1].reply_to:
        text += f" -> reply to {path[-1].reply_to}"
    return text


def _print_result(result: QueryResult, as_json: bool) -> None:

    from rich.console import Console
    from rich.markup import escape

    from hypermem.retrieve.context import shorten

    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    console = Console()
    stop = result.stop
    console.print(f"[bold]{escape(visible(result.query, one_line=True))}[/bold]  ({result.analysis.query_type} query; stopped by "
                  f"{stop.rule}: kept {stop.cut_at} of {stop.considered} {stop.counts}; "
                  f"{len(result.turns)} evidence turn{'' if len(result.turns) == 1 else 's'})", markup=True, highlight=False, soft_wrap=not console.is_terminal)  # fmt: skip
    rows = []
    for turn in result.turns:
        path = _path_text(turn.path)
        words = turn.snippet or shorten(turn.text)  # a long turn: its matching passage, as the context gives it
        rows.append([turn.dia_id, f"{turn.score:.4f}", f"{turn.speaker} ({turn.timestamp[:10]}): {words}", path])
    _show_table(console, "evidence turns", ["dia_id", "score", "turn", "path"], rows)
    if result.answer:
        console.print(f"[bold]answer:[/bold] {escape(visible(result.answer))}")
    console.print(f"[bold]context[/bold] ({result.context_tokens} tokens, {result.timings_ms['total']:.0f} ms):")
    console.print(visible(result.context), markup=False, highlight=False, soft_wrap=not console.is_terminal)


@ingest_app.command("locomo")
def ingest_locomo(
    path: str = typer.Argument(..., metavar="PATH", help="A LoCoMo-format JSON file."),
    conversation: list[str] = typer.Option(
        None, "--conversation", "-c", metavar="SAMPLE_ID", help="A sample_id to ingest (repeatable; default all)."
    ),
    llm: bool = typer.Option(
        None, "--llm/--no-llm", help="Force the LLM or the no-LLM path (default: LLM when configured)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the ingest reports as JSON (a list, one per conversation)."
    ),
) -> None:
    """Ingest LoCoMo conversations (one memory per sample_id); idempotent and resumable."""
    from dataclasses import asdict

    from rich.console import Console

    console = Console(stderr=as_json)
    convs = _load_locomo(path, conversation)
    with _open_service(llm) as svc:
        reports = _ingest_locomo(svc, convs, console)
        _work_done()  # before the report: once it is shown, a Ctrl-C cannot make the ingest look failed
        if as_json:
            typer.echo(json.dumps([asdict(r) for r in reports], indent=2))
        else:
            _print_reports(svc, reports, console)


def _search_option(name: str) -> Any:
    """The ``--name`` option of search setting ``name``: help and bounds from ``SearchConfig``; unset = the
    configured default (``Settings``)."""
    spec = SEARCH_FIELDS[name]
    low, high = spec.bounds or (None, None)
    if spec.choices:
        return typer.Option(
            None, "--" + name.replace("_", "-"), metavar="[" + "|".join(spec.choices) + "]", help=spec.help
        )
    return typer.Option(None, "--" + name.replace("_", "-"), min=low, max=high, help=spec.help)


@app.command()
def query(
    text: str = typer.Argument(..., metavar="QUESTION", help="The question."),
    memory: str = typer.Option(..., "--memory", "-m", help="The memory_id to search."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result (same JSON as the API)."),
    stopping: str = _search_option("stopping"),
    turn_budget: int = _search_option("turn_budget"),
) -> None:
    """Retrieve explained evidence for a question from one memory."""
    from hypermem.reindex import unfinished_memories
    from hypermem.retrieve.pipeline import QueryError
    from hypermem.service import UnknownMemory

    overrides = {k: v for k, v in {"stopping": stopping, "turn_budget": turn_budget}.items() if v is not None}
    with _open_service(None, existing=True) as svc:
        _known_memory(svc, memory, "--memory")
        # before the result: seen even when its reader stops early (``| head``), as ``hypermem doctor`` would say it
        for unfinished in (m for m in unfinished_memories(svc.store) if m.memory_id == memory):
            typer.echo(f"warning: {visible(memory, one_line=True)} has {_unfinished_sessions(unfinished)} (an ingest or "
                       "`hypermem reindex` was interrupted): their turns are searched without episodes and facts; "
                       "ingest the conversation again, or run `hypermem reindex`", err=True)  # fmt: skip
        try:
            result = svc.query(memory, text, **overrides)
        except QueryError as exc:
            field, _, problem = str(exc).partition(": ")
            named = f"--{field.replace('_', '-')}: {problem}" if field in overrides else str(exc)  # the option
            typer.echo(visible(f"error: {named}", one_line=True), err=True)
            raise typer.Exit(2) from exc
        except UnknownMemory as exc:  # an owner and a queued job, no dialogue yet
            raise _refused("--memory", f"memory {abbreviated(memory)!r} holds no dialogue yet") from exc
        _print_result(result, as_json)


def _unfinished_sessions(memory) -> str:
    """How much of an ``UnfinishedMemory`` is unfinished: "15 of its 15 stored sessions unfinished"."""
    return f"{memory.unfinished} of its {memory.sessions} stored sessions unfinished"


@app.command()
def demo(
    path: str = typer.Argument(
        None, metavar="PATH", help="LoCoMo-format JSON (default: the bundled sample conversation)."
    ),
    conversation: list[str] = typer.Option(
        None, "--conversation", "-c", metavar="SAMPLE_ID", help="A sample_id (repeatable)."
    ),
    question: str = typer.Option(None, "--question", "-q", help="Question to ask the first conversation."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
) -> None:
    """The main job: ingest a conversation file into the store (HYPERMEM_STORE; the embedded default), then answer a question from memory."""
    from hypermem.ingest.locomo import not_a_file
    from hypermem.retrieve.config import query_problem

    path = path or _sample_path()
    if not os.path.isfile(path):
        raise _refused(f"PATH {path!r}", not_a_file(Path(path)))  # fmt: skip
    convs = _load_locomo(path, conversation)  # the file first, then the question
    if question is None:
        if os.path.realpath(path) != os.path.realpath(_sample_path()):
            raise _refused("--question", "give --question when PATH is not the bundled sample")
        question = SAMPLE_QUESTION
    if problem := query_problem(question):  # before the ingest: a question it cannot ask writes nothing
        raise _refused("--question", problem)
    from rich.console import Console

    console = Console(stderr=as_json)  # with --json, stdout holds the query's JSON only
    with _open_service(None) as svc:
        reports = _ingest_locomo(svc, convs, console)
        _print_reports(svc, reports, console)
        result = svc.query(reports[0].memory_id, question)  # the first conversation asked for
        _work_done()
        _print_result(result, as_json)


@eval_app.command("locomo")
def eval_locomo(
    path: str = typer.Argument(..., metavar="PATH", help="A LoCoMo JSON file."),
    conversation: list[str] = typer.Option(
        None, "--conversation", "-c", metavar="SAMPLE_ID", help="A sample_id to run (repeatable; default all)."
    ),
    out: str = typer.Option(..., "--out", help="Directory for results.json, results.md, recall_vs_turns.png."),
    qa: bool = typer.Option(False, "--qa", help="Also answer with the configured LLM and score F1, BLEU-1, judge."),
    qa_system: list[str] = typer.Option(
        ["hypermem"], "--qa-system", metavar="SYSTEM", help="System whose context --qa answers from (repeatable)."
    ),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N questions of each conversation."),
) -> None:
    """LoCoMo benchmark: evidence recall/precision, turns, tokens and latency of hypermem, its ablations and baselines.

    Ingests conversations that are not in the store yet. Exits 2 when --qa is asked without an LLM.
    """
    import os

    from rich.console import Console

    from hypermem.config import Settings
    from hypermem.eval.benchmark import make_progress, run_benchmark
    from hypermem.eval.report import markdown, write_report
    from hypermem.eval.systems import default_systems
    from hypermem.ingest.locomo import load_locomo, not_a_file
    from hypermem.service import MemoryService

    if not os.path.isfile(path):
        raise _refused(f"PATH {path!r}", not_a_file(Path(path)))
    console = Console()
    settings = Settings()
    systems = default_systems()
    if qa and not settings.llm_enabled:
        typer.echo("error: --qa needs an LLM: set HYPERMEM_LLM_BASE_URL (and HYPERMEM_LLM_MODEL). Nothing was run.",
                   err=True)  # fmt: skip
        raise typer.Exit(2)
    unknown = sorted(set(qa_system) - {s.name for s in systems})  # checked with or without --qa
    if unknown:
        raise _refused("--qa-system", f"unknown system {unknown}; choose from {[s.name for s in systems]}")
    load_locomo(path, conversation or None)  # a bad file is named before any output (run_benchmark reads it again)
    _output_dir(out)  # after the other checks (a refused run makes nothing), before the work
    qa_records = None
    with MemoryService.open(settings) as svc, make_progress() as progress:
        run = run_benchmark(
            svc,
            path,
            conversation or None,
            systems=systems,
            limit=limit,
            keep_contexts=qa_system if qa else (),
            progress=progress,
        )
        results = run.results()
        if qa:
            from hypermem.eval.qa import run_qa_systems

            results["qa"], qa_records = run_qa_systems(svc.llm, run, qa_system, progress=progress)
    paths = write_report(results, out, qa_records)
    _show_markdown(console, markdown(results))
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}", soft_wrap=True)


def _refused(field: str, problem: str) -> typer.Exit:
    """Print ``error: FIELD: PROBLEM`` (one line, control characters escaped) to stderr; the ``typer.Exit(2)`` to raise.
    Every check of the CLI's own reports so, as ``hypermem ingest`` does for a bad file."""
    typer.echo(visible(f"error: {field}: {problem}", one_line=True), err=True)
    return typer.Exit(2)


def _known_memory(svc, memory: str, field: str) -> None:
    """Exit 2 naming ``field`` unless the store holds ``memory`` (the message points to ``hypermem memories``
    instead of listing every memory, and shortens a long id)."""
    from hypermem.records.owners import all_memories

    if memory not in all_memories(svc.store):
        raise _refused(field, f"no memory {abbreviated(memory)!r}; see `hypermem memories`")


def _output_dir(out: str) -> Path:
    """``--out`` as a directory that exists, or is made now in an existing one; else exits 2 naming ``--out``."""
    target = Path(out)
    if not out or (target.exists() and not target.is_dir()) or not target.parent.is_dir():
        raise _refused("--out", f"{out!r}: must be a directory, or a new one in an existing directory")  # fmt: skip
    try:  # made now, so that a directory it cannot write fails before the work, not after it
        target.mkdir(exist_ok=True)
    except OSError as exc:
        raise _refused("--out", f"{out!r}: cannot be made ({exc.strerror or type(exc).__name__})") from None  # fmt: skip
    return target


def _labelled_questions(path: str, conversations: list) -> list:
    """The file's questions (``hypermem.eval.dataset.load_questions``); evidence ids that name no turn are
    dropped there, and said here on stderr, with the first of them."""
    from hypermem.eval.dataset import load_questions

    questions, report = load_questions(path, conversations)
    dropped = report.unmatched + report.malformed
    if dropped:
        first = dropped[0]
        typer.echo(f"warning: {len(dropped)} evidence ids name no turn and were left out (first: "
                   f"{first['sample_id']}.qa[{first['question']}] {first['id']!r})", err=True)  # fmt: skip
    return questions


@eval_app.command("cv")
def eval_cv(
    path: str = typer.Argument(..., metavar="PATH", help="A LoCoMo JSON file."),
    folds: int = typer.Option(
        0, "--folds", min=0, help="Number of folds (default: one per conversation, leave one out)."
    ),
    out: str = typer.Option(..., "--out", help="Directory for cv.json and cv.md."),
    parts: bool = typer.Option(
        True, "--parts/--no-parts", help="Measure each part's contribution (two more runs per part: about 7x longer)."
    ),
) -> None:
    """Cross-validation: fit the turn ranker on the training conversations of each fold, report the held-out ones.

    Prints per-fold choices and test numbers, the pooled test recall, the standalone baselines and the
    contribution of each HyperMem/HingeMem part on held-out folds. Ingests conversations not in the store yet.
    """
    import os

    from rich.console import Console

    from hypermem.config import Settings
    from hypermem.eval.benchmark import ensure_ingested, make_progress
    from hypermem.eval.cv import Runner, cross_validate, folds_of, markdown
    from hypermem.ingest.locomo import load_locomo, not_a_file
    from hypermem.service import MemoryService

    if not os.path.isfile(path):
        raise _refused(f"PATH {path!r}", not_a_file(Path(path)))
    conversations = load_locomo(path)
    if len(conversations) < 2:
        raise _refused("PATH", f"{path!r} holds {len(conversations)} conversation: cross-validation needs 2 or more")
    target = _output_dir(out)  # after the file's checks: a refused run makes nothing
    try:
        groups = folds_of([c.sample_id for c in conversations], folds or len(conversations))
    except ValueError as exc:
        raise _refused("--folds", str(exc)) from exc
    questions = _labelled_questions(path, conversations)
    console = Console()
    with MemoryService.open(Settings(), use_llm=False) as svc, make_progress() as progress:
        for conversation in conversations:
            ensure_ingested(svc, conversation, progress)
        task = progress.add_task("questions", total=None)
        runner = Runner(svc, conversations, questions, on_question=lambda: progress.advance(task))
        results = cross_validate(runner, groups, parts=None if parts else {})
    target.mkdir(exist_ok=True)
    (target / "cv.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (target / "cv.md").write_text(markdown(results), encoding="utf-8")
    _show_markdown(console, markdown(results))
    console.print(f"wrote {target / 'cv.json'}, {target / 'cv.md'}", soft_wrap=True)


@eval_app.command("fit-ranker")
def eval_fit_ranker(
    path: str = typer.Argument(
        ..., metavar="PATH", help="A LoCoMo-format JSON file: conversations and questions with evidence dia_ids."
    ),
    out: str = typer.Option(..., "--out", help="The weights file to write (JSON)."),
) -> None:
    """Fit the learned turn ranker's weights on labelled conversations (logistic regression, rank weights >= 0).

    Use the file with HYPERMEM_TURN_RANKER_MODEL=FILE. Ingests conversations not in the store yet.
    Check held-out quality first with `hypermem eval cv`.
    """
    import os

    from hypermem.config import Settings
    from hypermem.eval.benchmark import ensure_ingested, make_progress
    from hypermem.eval.ranker_fit import FEW_TRAINING_QUESTIONS, fit_rows, question_rows
    from hypermem.ingest.locomo import load_locomo, not_a_file
    from hypermem.retrieve.pipeline import QueryError
    from hypermem.service import MemoryService

    if not os.path.isfile(path):
        raise _refused(f"PATH {path!r}", not_a_file(Path(path)))
    target = Path(out)
    if not out or target.is_dir() or not target.parent.is_dir():
        raise _refused("--out", f"{out!r}: must be a file path in an existing directory")
    conversations = load_locomo(path)
    questions = _labelled_questions(path, conversations)
    settings = Settings()
    with MemoryService.open(settings, use_llm=False) as svc, make_progress() as progress:
        for conversation in conversations:
            ensure_ingested(svc, conversation, progress)
        task = progress.add_task("questions", total=len(questions))
        try:
            rows = question_rows(svc, questions, on_question=lambda: progress.advance(task))
        except QueryError as exc:
            raise _refused("PATH", str(exc)) from exc
    try:
        model = fit_rows(rows, budget=settings.turn_budget)
    except ValueError as exc:
        raise _refused("PATH", str(exc)) from exc
    if len(rows) < FEW_TRAINING_QUESTIONS:
        typer.echo(f"warning: only {len(rows)} questions with evidence; weights fitted on so few are unreliable",
                   err=True)  # fmt: skip
    target.write_text(json.dumps(model.as_dict(), indent=2) + "\n", encoding="utf-8")
    for name, weight in model.weights.items():
        typer.echo(f"{name}\t{weight:+.4f}")
    typer.echo(f"bias\t{model.bias:+.4f}")
    for name, weight in model.recall_weights.items():
        typer.echo(f"recall.{name}\t{weight:+.4f}")
    typer.echo(f"recall.bias\t{model.recall_bias:+.4f}")
    typer.echo(f"recall.budget_scale\t{model.recall_budget_scale:.4g}")
    if model.boost is not None:
        typer.echo(f"boost\t{len(model.boost.roots)} trees, {len(model.boost.feature)} nodes")
    typer.echo(f"share_scale\t{model.share_scale:.4g}")
    typer.echo(f"wrote {out}; use it with HYPERMEM_TURN_RANKER_MODEL={out}", err=True)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on."),
    port: int = typer.Option(8000, min=1, max=65535, help="TCP port."),
    debug: bool = typer.Option(False, help="Flask debug mode (tracebacks in responses: never in production)."),
    sync_batch: int = typer.Option(50, min=1, help="Larger message batches are ingested in the background (202)."),
) -> None:
    """Run the HTTP API on Flask's development server.

    Production: ``gunicorn -c docker/gunicorn.conf.py hypermem.api.wsgi:app``. Set
    HYPERMEM_ADMIN_KEY to be able to create tenant keys (``POST /v1/tenants/{tenant}/keys``).
    """
    import signal

    from hypermem.api import create_app
    from hypermem.config import Settings
    from hypermem.errors import HypermemError

    settings = Settings()
    if not settings.admin_key:
        typer.echo("HYPERMEM_ADMIN_KEY is not set: no tenant key can be created.", err=True)
    # SIGTERM raises SystemExit, also during start-up, so every cleanup below and in create_app runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        api = create_app(settings, sync_batch_limit=sync_batch)
    except HypermemError as exc:
        _cannot_start(exc, 1)
    try:
        try:
            server = _bind(api, host, port, debug)
        except OSError as exc:
            _cannot_start(exc, 2)
        typer.echo(
            f"hypermem API on http://{host}:{port}/v1 (docs: http://{host}:{port}/docs, explorer: http://{host}:{port}/explore)"
        )
        server.log_startup()  # werkzeug's "Running on …" and its development-server warning
        server.serve_forever()
    finally:
        api.extensions["hypermem"].close()  # stops the embedded FalkorDB this process started


def _cannot_start(exc: Exception, code: int) -> NoReturn:
    """Exit ``code`` with one line saying why a server cannot start."""
    typer.echo(visible(f"cannot start: {exc}", one_line=True), err=True)
    raise typer.Exit(code) from None


def _check_address(host: str, port: int) -> None:
    """Bind ``host:port`` once and let it go. Raises ``OSError`` naming ``--port`` (in use, not allowed) or
    ``--host`` (unknown, not local): a server that binds later would report it in its own words, or not at all."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except socket.gaierror as exc:
        raise OSError(f"--host {host!r}: unknown host ({exc.strerror})") from exc
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise OSError(f"--port {port}: {exc.strerror} on {host}") from exc
        raise OSError(f"--host {host!r}: {exc.strerror}") from exc


def _bind(api, host: str, port: int, debug: bool):
    """Werkzeug's threaded development server bound to ``host:port`` (not serving yet).

    Raises ``OSError`` naming ``--port`` (in use, not allowed) or ``--host`` (unknown, not local)."""
    from werkzeug.debug import DebuggedApplication
    from werkzeug.serving import make_server

    api.debug = debug
    wsgi = DebuggedApplication(api, evalex=True) if debug else api
    _check_address(host, port)  # werkzeug prints its own message and exits 1 when it cannot bind
    return make_server(host, port, wsgi, threaded=True)


@app.command("mcp")
def mcp_command(
    http: bool = typer.Option(
        False, "--http", help="Streamable HTTP at http://HOST:PORT/mcp with tenant API keys (default: stdio)."
    ),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (--http)."),
    port: int = typer.Option(8765, min=1, max=65535, help="TCP port (--http)."),
) -> None:
    """Run the MCP server (tools: ingest, query, explain, topics, timeline); see hypermem.mcp_server."""
    from hypermem.mcp_server import run as run_mcp

    if http:
        try:
            _check_address(host, port)
        except OSError as exc:
            _cannot_start(exc, 2)

    run_mcp(http=http, host=host, port=port)


@app.command()
def memories(
    as_json: bool = typer.Option(False, "--json", help='Print [{"memory_id", "turns", "episodes", "facts", "words"}].'),
) -> None:
    """List the memories of the configured store: turns, episodes, facts and vocabulary words of each.

    Every memory that holds dialogue or has an owner, as the API sees them: one whose first batch is still a
    queued job (no turn yet) is listed with 0 turns."""
    from rich.console import Console

    from hypermem.records.owners import all_memories

    labels = {"turns": "Turn", "episodes": "Episode", "facts": "Fact", "words": "Term"}
    with _open_service(False, existing=True) as svc:
        listed = []
        for memory_id in all_memories(svc.store):
            counts = svc.store.counts(memory_id)
            listed.append({"memory_id": memory_id, **{name: counts.get(label, 0) for name, label in labels.items()}})
    if as_json:
        typer.echo(json.dumps(listed, ensure_ascii=False))
        return
    rows = [[str(value) for value in memory.values()] for memory in listed]
    _show_table(Console(), "memories", ["memory_id", *labels], rows)


@app.command()
def delete(
    memory: str = typer.Argument(..., metavar="MEMORY", help="The memory_id to delete."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete one memory: its dialogue, hypergraph, vocabulary and records. Other memories are untouched.

    Waits for an ingest of the memory to finish first (exits 1 if it does not). Exits 2 for an unknown memory.
    """
    from hypermem.locks import MemoryBusy

    with _open_service(False, existing=True) as svc:
        _known_memory(svc, memory, "MEMORY")
        if not yes and not _confirmed(visible(f"Delete memory {memory!r} and everything it holds?", one_line=True)):
            typer.echo("not deleted (not confirmed); --yes deletes without asking", err=True)
            raise typer.Exit(1)
        try:
            removed = svc.delete_memory(memory)
        except MemoryBusy as exc:
            typer.echo(visible(f"error: {exc}", one_line=True), err=True)
            raise typer.Exit(1) from exc
    typer.echo(visible(f"deleted memory {memory!r}: {removed} nodes", one_line=True))


@app.command()
def reindex() -> None:
    """Re-embed the configured store with the configured embedding model (after a model or dimension change).

    The dialogue stays; every memory's sessions are rebuilt with the new vectors and the vector
    indexes are recreated at the new dimension. Safe to run again after an interruption.
    """
    from hypermem.config import Settings
    from hypermem.embed import Embedder
    from hypermem.reindex import reindex as reindex_store
    from hypermem.store import check_store_exists, open_store

    settings = Settings()
    check_store_exists(settings.store)
    embedder = Embedder(settings.embedding_model, settings.embedding_batch_size)
    with open_store(settings) as store:
        report = reindex_store(
            settings, store, embedder, on_memory=lambda m, n: typer.echo(f"{m}: {n} turns re-embedded")
        )
    typer.echo(f"re-embedded {len(report.turns)} memor{'y' if len(report.turns) == 1 else 'ies'}: {report.old_model} ({report.old_dimension} dimensions) -> "
               f"{report.new_model} ({report.new_dimension} dimensions)")  # fmt: skip


@app.command()
def doctor() -> None:
    """Check the installation: store engine, version, indexes and schema; the embedding model and dimension.

    Opens the configured store (on a fresh install that creates the default embedded store
    directory), creates its indexes and records the embedding model, as the service does on
    start. Exits 1 when the model cannot be loaded offline, the store cannot be reached, or the
    store was built with another embedding dimension. Warns (exit 0) of memories an interrupted
    ingest or reindex left unfinished (``hypermem.reindex.unfinished_memories``).
    """
    from rich.console import Console

    from hypermem.config import Settings
    from hypermem.embed import Embedder, EmbeddingModelError, resolve_model_path
    from hypermem.records.owners import all_memories
    from hypermem.reindex import unfinished_memories
    from hypermem.store import SchemaMismatch, StoreError, open_store, shown_url

    console = Console()
    settings = Settings()
    summary: list[list[str]] = []  # (check, value); a table on a terminal, tab-separated lines in a pipe

    def fail(what: str, exc: Exception) -> typer.Exit:
        _show_table(console, "hypermem doctor", ["check", "value"], summary)
        console.print(f"[red]{what}: {exc}")
        return typer.Exit(1)

    try:
        embedder = Embedder(settings.embedding_model, settings.embedding_batch_size)
        summary.append(["embedding model", settings.embedding_model])
        summary.append(["model path", str(resolve_model_path(settings.embedding_model))])
        summary.append(["embedding dimension", str(embedder.dimension)])
    except (EmbeddingModelError, OSError) as exc:
        raise fail("embedding model", exc) from exc
    summary.append(["store", shown_url(settings.store)])
    try:
        store = open_store(settings)
    except StoreError as exc:
        raise fail("store", exc) from exc
    with store:
        summary.append(["engine", store.engine_version()])
        try:
            store.ensure_schema(settings.embedding_model, embedder.dimension)
        except SchemaMismatch as exc:
            raise fail("schema", exc) from exc
        meta = store.meta() or {}
        summary.append(["store built with", f"{meta.get('embedding_model')} ({meta.get('dimension')} dimensions)"])
        summary.append(["memories", str(len(all_memories(store)))])
        unfinished = unfinished_memories(store)
        summary.append(["unfinished memories", ", ".join(
            f"{visible(m.memory_id, one_line=True)} ({_unfinished_sessions(m)})" for m in unfinished
        ) or "none"])  # fmt: skip
        summary.append(["vector search", "HNSW indexes" if store.vector_indexes else
                        "exact cosine over the memory (HNSW indexes not searched; HYPERMEM_FALKORDB_VECTOR_INDEXES=true builds and uses them)"])  # fmt: skip
        indexes = [[i["label"], i["property"], i["type"]]
                   for i in sorted(store.indexes(), key=lambda i: (i["label"], i["type"], i["property"]))]  # fmt: skip
    _show_table(console, "hypermem doctor", ["check", "value"], summary)
    _show_table(console, "indexes", ["label", "property", "type"], indexes)
    if unfinished:  # the installation is fine: a warning, not a failure
        console.print("[yellow]warning: unfinished memories: an ingest or `hypermem reindex` was interrupted, and their "
                      "turns are searched without episodes and facts. Ingest those conversations again, or run "
                      "`hypermem reindex`.")  # fmt: skip
        return
    console.print("[green]ok")


if __name__ == "__main__":
    run()
