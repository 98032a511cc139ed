"""The web explorer of a memory's hypergraph: one page at ``/explore`` and its static assets.

The page itself needs no key: it asks the analyst for a tenant key (kept in the browser's
sessionStorage) and calls the JSON API with it (``/v1/memories``, ``/v1/memories/{id}/topics``,
``.../query``, ``.../hyperedges`` ...), so a tenant sees exactly what its key may read there.
The graph is drawn with cytoscape.js, vendored under ``static/vendor/`` from ``explorer/package-lock.json``
(MIT license alongside); nothing is loaded from a CDN, so the explorer works offline.
"""

from __future__ import annotations

from flask import Blueprint, render_template

blp = Blueprint(
    "explorer", __name__, url_prefix="/explore",
    static_folder="static", static_url_path="/static", template_folder="templates",
)  # fmt: skip


@blp.route("", methods=["GET"], strict_slashes=False)
def page():
    """The explorer page (HTML); its data comes from the JSON API with the analyst's key."""
    return render_template("explorer.html")
