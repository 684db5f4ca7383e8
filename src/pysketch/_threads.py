"""Thread limits for BLAS during small, latency-bound computations (the decoders).

The decoders call BLAS on tiny matrices thousands of times (inside scipy's L-BFGS-B and
the dense products). Multi-threaded OpenBLAS then spends more time waking and spinning
threads than computing: measured here, a k = d = 10, m = 1000 CL-OMPR decode took 0.4 to
0.7 s of wall time and twice that in CPU time with 2 BLAS threads, 0.2 s with one. When
threadpoolctl is installed (the `threads` extra: `pip install "pysketch[threads]"`), `blas_single_thread()`
limits every loaded BLAS to one thread
for its duration; without it, it does nothing (set OPENBLAS_NUM_THREADS=1 to get the same
effect).
"""

import contextlib

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None


@contextlib.contextmanager
def blas_single_thread():
    if threadpool_limits is None:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
