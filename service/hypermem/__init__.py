"""hypermem: a hypergraph memory for long-term conversational agents."""

__version__ = "0.1.0"
