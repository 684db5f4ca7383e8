"""Full-size privacy audits of every release path (issue 21, "Done means" item 3).

    python benchmarks/reports/privacy_audits.py [--scale 1.0] [--only TEXT] [--baselines] [--with-mechanisms]

Runs every audit of tests/test_privacy_audits.py (AUDITS: the release paths added by the
PCA, M2M, distance and regression issues, feature and data subsampling, make_private and the
k-means fit end to end) and of tests/test_privacy_audits_baselines.py (the private comparison
baselines: DPLloyd, AnalyzeGaussPCA, the M2M direct releases, logistic objective
perturbation, dp_sgd; and the NEGATIVE audits of the baselines that make no privacy claim,
dp_sgd, rfm objective_perturbation and WishartPCA, whose bounds are expected ABOVE the
nominal epsilon) at its full size (times --scale), and with --with-mechanisms also the
mechanism audits of tests/test_privacy.py and the path audits of the other test files
(quadratic, SJLT, PCA baseline, SSP, L2Laplace, ridge), and prints one row per audit:
mechanism/path, neighbouring relation, claimed epsilon, delta, n draws per side, the
Clopper-Pearson lower bound (one-sided 1 - 5e-7 per side), lb/eps and seconds. A lower bound
above the claim is a privacy failure (probability <= 1e-6 for a correct release); a bound
near the claim means the audit has power. The exit code is 1 if any bound exceeds its claim
(or, for a baseline without a claim, if its bound does not exceed the nominal epsilon).
"""

import argparse
import os
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def _extra_audits():
    """(name, function(n) -> (lb, eps), relation, delta, full n) of the audits in other test files."""
    import test_distances
    import test_onehot_maps as OH
    import test_pca_baselines
    import test_privacy
    import test_quadratic
    import test_rfm_baselines
    import test_rfm_ssp
    return [
        ("Laplace mechanism", test_privacy._laplace_audit, "L1 = 1", 0.0, 1_000_000),
        ("complex Laplace", test_privacy._complex_laplace_audit, "L1 = sqrt 2", 0.0, 1_000_000),
        ("Gaussian mechanism", test_privacy._gaussian_audit, "L2 = 1", 1e-5, 1_000_000),
        ("noisy count", test_privacy._count_audit, "add_remove", 0.0, 1_000_000),
        ("SJLT release Laplace", test_distances._sjlt_laplace_audit, "l1<=1", 0.0, 200_000),
        ("quadratic Laplace", test_quadratic._quadratic_laplace_audit, "add_remove", 0.0, 200_000),
        ("quadratic Gaussian", test_quadratic._quadratic_gaussian_audit, "add_remove", "see test", 200_000),
        ("quadratic Laplace replace", test_quadratic._quadratic_laplace_replace_audit, "replace", 0.0, 200_000),
        ("one-hot histogram Laplace", lambda n: (OH._add_remove_audit(*OH._hist_pair()[:3], n), 1.0),
         "add_remove", 0.0, 200_000),
        ("one-hot histogram Laplace replace", lambda n: (OH._replace_audit(*OH._hist_pair(), n), 1.0),
         "replace", 0.0, 200_000),
        ("one-hot RACE Laplace", lambda n: (OH._add_remove_audit(*OH._race_pair()[:3], n), 1.0),
         "add_remove", 0.0, 200_000),
        ("one-hot RACE Laplace replace", lambda n: (OH._replace_audit(*OH._race_pair(), n), 1.0),
         "replace", 0.0, 200_000),
        ("LaplaceCovariancePCA", test_pca_baselines._laplace_pca_audit, "see test", 0.0, 200_000),
        ("rfm SSP release_statistics", test_rfm_ssp._ssp_audit, "add_remove", 1e-5, 1_000_000),
        ("L2Laplace", test_rfm_baselines._l2laplace_audit, "L2 = 1", 0.0, 1_000_000),
        ("private_ridge (mechanism)", test_rfm_baselines._private_ridge_audit, "replace", 1e-5, 1_000_000),
        ("objective perturbation ball", test_rfm_baselines._objective_perturbation_ball_audit, "replace", 0.0,
         1_000_000),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every full size by this")
    ap.add_argument("--only", default=None, help="run only the audits whose name contains one of these "
                    "comma-separated texts")
    ap.add_argument("--baselines", action="store_true",
                    help="run only the audits of the comparison baselines (tests/test_privacy_audits_baselines.py)")
    ap.add_argument("--with-mechanisms", action="store_true",
                    help="also the audits of tests/test_privacy.py and the other test files")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("PYSKETCH_NUM_THREADS", "1")
    import test_privacy_audits as T
    import test_privacy_audits_baselines as TB
    rows = [(a[0], a[1], a[2], a[3], a[5]) for a in T.AUDITS + TB.AUDITS + TB.NEGATIVE_AUDITS]
    no_claim = {a[0] for a in TB.NEGATIVE_AUDITS}
    if args.with_mechanisms:
        rows += _extra_audits()
    if args.baselines:
        rows = [r for r in rows if r[1].__module__ == "test_privacy_audits_baselines"]
    if args.only:
        rows = [r for r in rows if any(text in r[0] for text in args.only.split(","))]
    print(f"{'mechanism / path':42s} {'relation':16s} {'eps':>4s} {'delta':>7s} {'n/side':>9s} {'lb':>7s} "
          f"{'lb/eps':>6s} {'sec':>7s}")
    bad = 0
    for name, fn, relation, delta, n in rows:
        n = max(int(n * args.scale), 1000)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lb, eps = fn(n)
        sec = time.perf_counter() - t
        if isinstance(delta, str) and fn.__module__ in ("test_privacy_audits", "test_privacy_audits_baselines"):
            delta = T._delta(n)
        if name in no_claim:
            bad += lb <= eps
            note = "  above the nominal eps (no DP claim, as documented)" if lb > eps else "  NOT SEEN TO LEAK"
        else:
            bad += lb > eps
            note = "  ABOVE THE CLAIM" if lb > eps else ""
        d = f"{delta:.0e}" if isinstance(delta, float) and delta > 0 else str(delta)
        print(f"{name:42s} {relation:16s} {eps:4.1f} {d:>7s} {n:9d} {lb:7.3f} {lb / eps:6.2f} {sec:7.1f}{note}",
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
