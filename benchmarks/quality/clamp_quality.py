"""Error vs sketch size for CL-AMP and CL-OMPR on the thesis generator (issue 6, "Done means").

Data: Chatalic's thesis model (4.5) with sigma_inter = 1 and separation s = 2.5 (sigma_intra =
1 / (s k^(1/d)); notes seed003 sec. 7.1), n = 10^4 records, k = d = 10 by default; adapted-radius
frequencies (thesis sec. 4.2.6), dense operator. For every seed and every m in {2, 3, 5, 10} kd
both decoders decode the same sketch; the figure is MSE(X, decoded) / MSE(X, true centres)
(thesis (4.3)), and a decode "succeeds" when that ratio is <= 1.05. Prints per-seed lines and
the medians and success counts over the seeds.

The kernel scale: ``--sigma2 X`` uses sigma_k^2 = X for every seed (the thesis optimum for
k = d = 10 is sigma_k^2 ~ sigma_inter^2 = 1, notes sec. 5); ``--sigma2 auto`` uses
pysketch.kernel_scale.kernel_scale(X, k) (the estimators' default, no hand tuning).

    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/clamp_quality.py --seeds 20
    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/clamp_quality.py --seeds 20 --ratios 2 --sigma2 auto --no-clompr
    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/clamp_quality.py --k 20 --d 60 --ratios 2 --no-clompr --seeds 5
"""

import argparse
import math
import os
import sys

import numpy as np

from pysketch.datasets import make_gmm
from pysketch.decoders import DecodingProblem, DiracAtoms, clompr
from pysketch.decoders import cl_amp as clamp
from pysketch.features import make_feature_map
from pysketch.frequencies import make_law
from pysketch.metrics import mse
from pysketch.kernel_scale import kernel_scale

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

SUCCESS = 1.05


def run(k, d, n, ratios, seeds, sigma2, law, with_clompr, clompr_init, out=print):
    rows = []
    for seed in seeds:
        X, _, p = make_gmm(n, k, d, separation=2.5, sigma_intra=1.0 / (2.5 * k ** (1.0 / d)), random_state=seed,
                           return_params=True)
        base = mse(X, p["centers"])
        s2 = kernel_scale(X, k, random_state=seed) ** 2 if sigma2 == "auto" else float(sigma2)
        lo, hi = X.min(0), X.max(0)
        for ratio in ratios:
            m = int(round(ratio * k * d))
            fm = make_feature_map(d, m, "complex", operator="dense", law=make_law(law, math.sqrt(s2)),
                                  random_state=1000 + seed)
            sk = fm.sketch(X)
            with _timing.Stopwatch() as clock:
                sol = clamp(sk, None, k, (lo, hi), random_state=seed)
            t_amp = clock.wall
            r_amp = mse(X, sol.theta) / base
            r_omp = t_omp = float("nan")
            if with_clompr:
                with _timing.Stopwatch() as clock:
                    family = DiracAtoms(DecodingProblem(fm, sk.mean()), lo, hi)
                    r_omp = mse(X, clompr(family, k, n_init=clompr_init, random_state=seed).theta) / base
                t_omp = clock.wall
            rows.append((seed, ratio, r_amp, r_omp))
            out(f"seed {seed:3d} m/kd {ratio:4g} sigma_k^2 {s2:.3f}: CL-AMP {r_amp:.4f} ({t_amp:.1f} s, residual "
                f"{sol.relative_residual:.4f}, median tau {np.median(sol.spreads):.4f} vs sigma_intra^2 "
                f"{p['sigma_intra'] ** 2:.4f})   CL-OMPR {r_omp:.4f} ({t_omp:.1f} s)", flush=True)
    out(f"\nk={k} d={d} n={n} law={law} sigma_k^2={sigma2} seeds={len(seeds)}: MSE / MSE(true centres)")
    out(f"{'m/kd':>6} {'CL-AMP median':>14} {'success':>8} {'CL-OMPR median':>15} {'success':>8}")
    for ratio in ratios:
        a = np.array([r[2] for r in rows if r[1] == ratio])
        o = np.array([r[3] for r in rows if r[1] == ratio])
        out(f"{ratio:6g} {np.median(a):14.4f} {np.sum(a <= SUCCESS):5d}/{a.size:<2d} {np.median(o):15.4f} "
            f"{np.sum(o <= SUCCESS):5d}/{o.size:<2d}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--ratios", type=float, nargs="+", default=[2, 3, 5, 10])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--sigma2", default="1.0", help="kernel variance sigma_k^2, or 'auto'")
    ap.add_argument("--law", default="adapted_radius", choices=["adapted_radius", "gaussian"])
    ap.add_argument("--no-clompr", action="store_true")
    ap.add_argument("--clompr-init", type=int, default=3)
    a = ap.parse_args(argv)
    run(a.k, a.d, a.n, a.ratios, range(a.first_seed, a.first_seed + a.seeds), a.sigma2, a.law, not a.no_clompr,
        a.clompr_init)


if __name__ == "__main__":
    main()
