"""How the native libraries of one hypermem process use the CPU.

numpy's BLAS (OpenBLAS, in numpy's wheel) starts one worker thread per core, and after each matrix product its
workers spin waiting for the next one. hypermem's products are small (a query's words against one memory's
vocabulary, an episode's turns against each other), so the workers add nothing, while their spinning takes a core
from the graph server, the embedding model and spaCy: on a 2-core machine a query cost 54 ms of this process's CPU
with them and 25 ms without, and its wall time went from 55.5 to 34.2 ms (200 LoCoMo questions, one process,
``OPENBLAS_NUM_THREADS`` unset against 1; load average 2.6–3.0). ``single_thread_blas`` keeps BLAS on the
calling thread, through ``threadpoolctl``, whatever was imported first.

Python's cyclic garbage collector is the other hidden cost. By default a young collection runs every 700 container
allocations and a full one every 100 young ones; a query allocates tens of thousands of rows (a cold memory's
2,500 vocabulary words, a leg's candidates), so it ran 38 collections a query, and every full one walked the
~145,000 objects of the loaded modules and models: 150 ms each, the tail of the latency. At 944 memories and 957k
facts in one store (``bench/bench_scale.py``; 120 questions to memories no question had touched, one process,
machine otherwise idle) query p50/p95 went from 113.2/295.0 ms to 84.1/132.0 ms when what is loaded is frozen out of
the collector's walks (``freeze_loaded_objects``) and a young collection waits for 20,000 allocations
(``space_out_collections``).
Reference cycles are still collected, only less often.
"""

from __future__ import annotations

import gc
from functools import cache

from threadpoolctl import threadpool_limits

YOUNG_GC_ALLOCATIONS = 20_000  # container allocations between young collections (Python's default: 700)


@cache
def single_thread_blas() -> None:
    """Limit every BLAS library loaded in this process to one thread (once per process; idempotent)."""
    threadpool_limits(limits=1, user_api="blas")


def space_out_collections() -> None:
    """Run a young collection every ``YOUNG_GC_ALLOCATIONS`` container allocations (see the module docstring)."""
    gc.set_threshold(YOUNG_GC_ALLOCATIONS, 10, 10)


@cache
def freeze_loaded_objects() -> None:
    """Collect, then freeze every object alive out of the collector's walks (``gc.freeze``), once per process: call
    it when the models are loaded. Once, because a frozen object is never collected as part of a reference cycle, so
    freezing again and again in a process that opens and closes services (a test run) would keep their garbage."""
    gc.collect()
    gc.freeze()
