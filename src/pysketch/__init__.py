"""pysketch: private compressive learning from one short sketch of a dataset.

The compiled core holds a fast Walsh-Hadamard transform (SIMD, multi-threaded over
batches); see :func:`pysketch.fwht`. The instruction set and thread count in use are
reported and set by :func:`simd_level` and :func:`set_num_threads`.
"""

__version__ = "0.1.0"

from .hadamard import fwht
from .runtime import (
    get_num_threads,
    max_simd_level,
    set_num_threads,
    set_simd_level,
    simd_level,
)

__all__ = [
    "__version__",
    "fwht",
    "get_num_threads",
    "max_simd_level",
    "set_num_threads",
    "set_simd_level",
    "simd_level",
]
