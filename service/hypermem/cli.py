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
