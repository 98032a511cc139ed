"""Load the named Cypher files shipped in the ``hypermem.cypher`` package.

A query name is its path under ``cypher/`` without the suffix, e.g.
``"retrieve/expand_topic_episodes"``. Files are read once and cached.
Raises ``KeyError`` for an unknown name.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """Return the text of ``cypher/{name}.cypher``; ``KeyError`` if there is none."""
    resource = resources.files("hypermem.cypher").joinpath(f"{name}.cypher")
    if not resource.is_file():
        raise KeyError(f"no Cypher file named {name!r}")
    lines = [line for line in resource.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip()


def names() -> list[str]:
    """Every query name, sorted."""
    root = resources.files("hypermem.cypher")
    found: list[str] = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".cypher"):
                found.append(prefix + child.name[: -len(".cypher")])

    walk(root, "")
    return sorted(found)
