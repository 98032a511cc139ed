"""Swagger UI's assets served from the ``swagger-ui-bundle`` package, so ``/docs`` works offline."""

from __future__ import annotations

from flask import Blueprint, send_from_directory
from swagger_ui_bundle import swagger_ui_path

ASSETS_URL = "/docs/assets/"
blp = Blueprint("swagger-assets", __name__)


@blp.route(f"{ASSETS_URL}<path:filename>")
def asset(filename: str):
    """One file of swagger-ui-dist (swagger-ui-bundle.js, swagger-ui.css, ...)."""
    return send_from_directory(swagger_ui_path, filename, max_age=86400)
