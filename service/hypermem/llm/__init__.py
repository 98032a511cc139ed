"""The optional LLM layer: ``client`` (OpenAI-compatible client with cache, retries and
counters), ``prompts`` (every prompt, schema and parser) and ``local`` (an offline
llama.cpp server for SmolLM2). Nothing here is imported unless an LLM is configured.
"""
