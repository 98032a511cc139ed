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


@app.command()
def doctor() -> None:
    """Check the installation: store engine, version, indexes and schema; the embedding model and dimension.

    Opens the configured store (on a fresh install that creates the default embedded store
    directory), creates its indexes and records the embedding model, as the service does on
    start. Exits 1 when the model cannot be loaded offline, the store cannot be reached, or
    the store was built with another embedding dimension.
    """
    from rich.console import Console
    from rich.table import Table

    from hypermem.config import Settings
    from hypermem.embed import Embedder, EmbeddingModelError, resolve_model_path
    from hypermem.store import SchemaMismatch, StoreError, open_store

    console = Console()
    settings = Settings()
    summary = Table(title="hypermem doctor", show_header=False)
    summary.add_column("check", style="bold")
    summary.add_column("value", overflow="fold")

    def fail(what: str, exc: Exception) -> typer.Exit:
        console.print(summary)
        console.print(f"[red]{what}: {exc}")
        return typer.Exit(1)

    try:
        embedder = Embedder(settings.embedding_model, settings.embedding_batch_size)
        summary.add_row("embedding model", settings.embedding_model)
        summary.add_row("model path", str(resolve_model_path(settings.embedding_model)))
        summary.add_row("embedding dimension", str(embedder.dimension))
    except (EmbeddingModelError, OSError) as exc:
        raise fail("embedding model", exc) from exc
    summary.add_row("store", settings.store)
    try:
        store = open_store(settings)
    except StoreError as exc:
        raise fail("store", exc) from exc
    with store:
        summary.add_row("engine", store.engine_version())
        try:
            store.ensure_schema(settings.embedding_model, embedder.dimension)
        except SchemaMismatch as exc:
            raise fail("schema", exc) from exc
        meta = store.meta() or {}
        summary.add_row("store built with", f"{meta.get('embedding_model')} ({meta.get('dimension')} dimensions)")
        summary.add_row("memories", str(len(store.memory_ids())))
        indexes = Table(title="indexes")
        for column in ("label", "property", "type"):
            indexes.add_column(column)
        for index in sorted(store.indexes(), key=lambda i: (i["label"], i["type"], i["property"])):
            indexes.add_row(index["label"], index["property"], index["type"])
    console.print(summary)
    console.print(indexes)
    console.print("[green]ok")
