"""The HTTP API: ``create_app`` builds the Flask app; ``hypermem.api.wsgi:app`` is the gunicorn entry."""

from hypermem.api.app import create_app

__all__ = ["create_app"]
