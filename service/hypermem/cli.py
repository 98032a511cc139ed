"""The ``hypermem`` command line: ingest, query, eval, serve, doctor."""

from __future__ import annotations

import logging

import typer

app = typer.Typer(help="hypermem: a hypergraph memory for long-term conversational agents.", no_args_is_help=True)
ingest_app = typer.Typer(help="Ingest conversations into memory.", no_args_is_help=True)
eval_app = typer.Typer(help="Measure retrieval quality.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(eval_app, name="eval")


@app.callback()
def main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log at INFO level.")) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@eval_app.command("locomo")
def eval_locomo(
    path: str = typer.Argument(..., help="A LoCoMo JSON file."),
    conversation: list[str] = typer.Option(None, "--conversation", "-c", help="A sample_id to run (repeatable; default all)."),
    out: str = typer.Option(..., "--out", help="Directory for results.json, results.md, recall_vs_turns.png."),
    qa: bool = typer.Option(False, "--qa", help="Also answer with the configured LLM and score F1, BLEU-1, judge."),
    qa_system: list[str] = typer.Option(["hypermem"], "--qa-system", help="System whose context --qa answers from (repeatable)."),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N questions of each conversation."),
) -> None:
    """LoCoMo benchmark: evidence recall/precision, turns, tokens and latency of hypermem, its ablations and baselines.

    Ingests conversations that are not in the store yet. Exits 2 when --qa is asked without an LLM.
    """
    import os

    from rich.console import Console
    from rich.markdown import Markdown

    from hypermem.config import Settings
    from hypermem.eval.benchmark import make_progress, run_benchmark
    from hypermem.eval.report import markdown, write_report
    from hypermem.eval.systems import default_systems
    from hypermem.service import MemoryService

    if not os.path.isfile(path):
        raise typer.BadParameter(f"no such file: {path}", param_hint="PATH")
    console = Console()
    settings = Settings()
    systems = default_systems()
    if qa and not settings.llm_enabled:
        console.print("[red]--qa needs an LLM: set HYPERMEM_LLM_BASE_URL (and HYPERMEM_LLM_MODEL). Nothing was run.[/red]")
        raise typer.Exit(2)
    unknown = sorted(set(qa_system) - {s.name for s in systems}) if qa else []
    if unknown:
        raise typer.BadParameter(f"unknown system {unknown}; choose from {[s.name for s in systems]}", param_hint="--qa-system")
    qa_records = None
    with MemoryService.open(settings) as svc, make_progress(console) as progress:
        run = run_benchmark(
            svc, path, conversation or None, systems=systems, limit=limit, keep_contexts=qa_system if qa else (),
            progress=progress,
        )
        results = run.results()
        if qa:
            from hypermem.eval.qa import run_qa_systems

            results["qa"], qa_records = run_qa_systems(svc.llm, run, qa_system, progress=progress)
    paths = write_report(results, out, qa_records)
    console.print(Markdown(markdown(results)))
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")


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
    import sys

    from hypermem.api import create_app
    from hypermem.config import Settings

    settings = Settings()
    if not settings.admin_key:
        typer.echo("HYPERMEM_ADMIN_KEY is not set: no tenant key can be created.", err=True)
    api = create_app(settings, sync_batch_limit=sync_batch)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run the cleanup below on `kill` too
    typer.echo(f"hypermem API on http://{host}:{port}/v1 (docs: http://{host}:{port}/docs)")
    try:
        api.run(host=host, port=port, debug=debug, use_reloader=False, threaded=True)
    finally:
        api.extensions["hypermem"].close()  # stops the embedded FalkorDB this process started
