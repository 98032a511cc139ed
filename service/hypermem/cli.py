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
    from hypermem.api import create_app
    from hypermem.config import Settings

    settings = Settings()
    if not settings.admin_key:
        typer.echo("HYPERMEM_ADMIN_KEY is not set: no tenant key can be created.", err=True)
    api = create_app(settings, sync_batch_limit=sync_batch)
    typer.echo(f"hypermem API on http://{host}:{port}/v1 (docs: http://{host}:{port}/docs)")
    try:
        api.run(host=host, port=port, debug=debug, use_reloader=False, threaded=True)
    finally:
        api.extensions["hypermem"].close()
