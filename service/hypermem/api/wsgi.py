"""Gunicorn entry point: ``gunicorn -c docker/gunicorn.conf.py hypermem.api.wsgi:app``.

Settings come from ``HYPERMEM_*`` environment variables. Each worker joins the embedded FalkorDB
that the gunicorn master started (``keep_server=True``), or connects to Neo4j. gunicorn's own error
answers (a request it refuses before the app sees it) are JSON, as the app's are
(``hypermem.api.limits.answer_gunicorn_errors_in_json``).
"""

from hypermem.api.app import create_app
from hypermem.api.limits import answer_gunicorn_errors_in_json

answer_gunicorn_errors_in_json()
app = create_app(keep_server=True)
