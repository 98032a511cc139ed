"""Every Cypher query hypermem runs, one named ``.cypher`` file each, loaded by ``hypermem.store.queries``."""
