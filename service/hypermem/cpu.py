"""How the native libraries of one hypermem process use the CPU.

numpy's BLAS (OpenBLAS, in numpy's wheel) starts one worker thread per core, and after each matrix product its
workers spin waiting for the next one. hypermem's products are small (a query's words against one memory's
vocabulary, an episode's turns against each other), so the workers add nothing, while their spinning takes a core
from the graph server, the embedding model and spaCy: on a 2-core machine a query cost 54 ms of this process's CPU
with them and 25 ms without, and its wall time went from 55.5 to 34.2 ms (200 LoCoMo questions, one process,
``OPENBLAS_NUM_THREADS`` unset against 1; load average 2.6–3.0). ``single_thread_blas`` keeps BLAS on the
calling thread, through ``threadpoolctl``, whatever was imported first.
"""

from __future__ import annotations

from functools import cache

from threadpoolctl import threadpool_limits


@cache
def single_thread_blas() -> None:
    """Limit every BLAS library loaded in this process to one thread (once per process; idempotent)."""
    threadpool_limits(limits=1, user_api="blas")
