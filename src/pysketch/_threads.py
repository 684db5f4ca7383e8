"""Thread limits for BLAS during small, latency-bound computations (the decoders).

The decoders call BLAS on tiny matrices thousands of times (inside scipy's L-BFGS-B and
the dense products). Multi-threaded OpenBLAS then spends more time waking and spinning
threads than computing: measured here, a k = d = 10, m = 1000 CL-OMPR decode took 0.4 to
0.7 s of wall time and twice that in CPU time with 2 BLAS threads, 0.2 s with one. When
threadpoolctl is installed (the `threads` extra: `pip install "pysketch[threads]"`), `blas_single_thread()`
limits every loaded BLAS to one thread
for its duration; without it, it does nothing (set OPENBLAS_NUM_THREADS=1 to get the same
effect).

threadpoolctl's scan of the loaded libraries costs about 1 ms (measured here, loaded
machine), more than a small decode's BLAS work, so the controller is made once and made
again only when modules were imported since (a new extension module may load another
BLAS): entering the limit then costs about 0.01 ms.
"""

import contextlib
import sys
import threading

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover
    ThreadpoolController = None

_controller = [None, -1]  # the controller, and len(sys.modules) when it was made
_lock = threading.Lock()


def _blas_controller():
    with _lock:
        if _controller[1] != len(sys.modules):
            _controller[:] = [ThreadpoolController(), len(sys.modules)]
        return _controller[0]


@contextlib.contextmanager
def blas_single_thread():
    if ThreadpoolController is None:
        yield
        return
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield
