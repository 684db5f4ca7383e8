"""What the private baselines share: the check of the count's share of epsilon and the
clipping of records to the public box (with the warning that counts them)."""

import numbers
import warnings

import numpy as np


def _check_share(count_share):
    if isinstance(count_share, (bool, np.bool_)) or not isinstance(count_share, numbers.Real) or not (
            0.0 < count_share < 1.0):
        raise ValueError(f"count_share must be a number in (0, 1), got {count_share!r}")
    return float(count_share)


def _clip_records(X, lo, hi):
    """(X clipped to [lo, hi], number of records that had a coordinate outside), with a
    RuntimeWarning giving that number. X is never modified in place."""
    outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
    if outside:
        warnings.warn(f"{outside} of {X.shape[0]} records lie outside bounds and were clipped to the box "
                      "(the privacy guarantee assumes the box)", RuntimeWarning, stacklevel=3)
        X = np.clip(X, lo, hi)
    return X, outside
