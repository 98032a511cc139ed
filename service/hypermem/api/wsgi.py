"""Gunicorn entry point: ``gunicorn -c docker/gunicorn.conf.py hypermem.api.wsgi:app``.

Settings come from ``HYPERMEM_*`` environment variables. Each worker joins the embedded FalkorDB
that the gunicorn master started (``keep_server=True``), or connects to Neo4j.
"""

from hypermem.api.app import create_app

app = create_app(keep_server=True)
