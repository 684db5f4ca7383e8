"""Mutation check of the privacy code (issue 21, "Done means" item 4).

Each fault below is a deliberate, plausible bug in a privacy-critical line (a sensitivity
constant, a budget split, a grid-rounding allowance, a noise scale, an accountant charge,
the replace factor, the amplification formula, a clipping check, the calibration ...). For
each, this script writes the faulty text into the file of a SEPARATE clone of the
repository, runs the named tests there, records whether at least one of them fails, and
restores the file. A fault counts as caught only when pytest reports failing tests (exit
code 1): an import or collection error (exit code 2+) is reported as an error, not a catch.
Before the faults, the named tests are run once on the unmodified clone and must pass.

Run it in a clone with its own environment, never in a working tree others use:

    git clone /work/main /work/mut            # once; then rsync changed .py files into it
    python benchmarks/reports/mutation_check.py --repo /work/mut --python /work/mutvenv/bin/python

Prints a table (fault, tests run, caught yes/no, seconds); the exit code is nonzero if any
fault is not caught or the baseline fails.
"""

import argparse
import os
import subprocess
import sys
import time

T = "tests/test_privacy_audits.py"
P = "tests/test_privacy.py"
TB = "tests/test_privacy_audits_baselines.py"

# (name, file, exact old text (must occur once), new text, pytest arguments)
FAULTS = [
    ("Laplace grid allowance (+D) dropped", "src/pysketch/privacy/mechanisms.py",
     "delta_units = math.ceil(Fraction(self.sensitivity) / Fraction(g)) + D",
     "delta_units = math.ceil(Fraction(self.sensitivity) / Fraction(g))",
     [P + "::test_laplace_enlarges_the_sensitivity_by_the_rounding_of_every_coordinate"]),
    ("Gaussian grid allowance (+g sqrt D) dropped", "src/pysketch/privacy/mechanisms.py",
     "sens = self.sensitivity + g * math.sqrt(D) * (1.0 + 1e-12)",
     "sens = self.sensitivity",
     [T + "::test_gaussian_grid_rounding_allowance"]),
    ("grid resolution 2^-30 -> 2^-20", "src/pysketch/privacy/mechanisms.py",
     "GRID_BITS = 30", "GRID_BITS = 20",
     [T + "::test_gaussian_grid_rounding_allowance", T + "::test_laplace_grid_is_fine_enough"]),
    ("Laplace noise scale halved", "src/pysketch/privacy/mechanisms.py",
     "t = Fraction(delta_units) / Fraction(self.epsilon)",
     "t = Fraction(delta_units) / Fraction(2 * self.epsilon)",
     [P + "::test_privacy_audit_ci_size[_laplace_audit]"]),
    ("count noise scale 1/eps -> 1/(2 eps)", "src/pysketch/privacy/mechanisms.py",
     "t = Fraction(1) / Fraction(epsilon_count)",
     "t = Fraction(1, 2) / Fraction(epsilon_count)",
     [T + "::test_noisy_count_is_discrete_laplace_of_scale_one_over_epsilon"]),
    ("analytic Gaussian calibration (Delta/2sigma -> Delta/4sigma)", "src/pysketch/privacy/mechanisms.py",
     "u, v = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity",
     "u, v = sensitivity / (4.0 * sigma), epsilon * sigma / sensitivity",
     [P + "::test_analytic_gaussian_reference_values"]),
    ("sum/count split: sum gets the whole epsilon", "src/pysketch/privacy/release.py",
     "eps_sum = epsilon - eps_count",
     "eps_sum = epsilon",
     [T + "::test_release_calibrates_each_part_for_its_share",
      T + "::test_release_path_audit_ci_size[make_private_laplace_add_remove]"]),
    ("a budget (make_private's) charges less than its epsilon", "src/pysketch/privacy/budget.py",
     "_charge_accountant(accountant, self.epsilon, self.delta, self.what)",
     "_charge_accountant(accountant, 0.9 * self.epsilon, self.delta, self.what)",
     [P + "::test_accountant_refuses_overspend_before_noise"]),
    ("replace factor 2 of Fourier maps dropped", "src/pysketch/features.py",
     'factor = 2.0 if neighbouring == "replace" else 1.0',
     "factor = 1.0",
     [T + "::test_release_calibrates_each_part_for_its_share",
      T + "::test_release_path_audit_ci_size[make_private_laplace_replace]"]),
    ("amplification: eps' = log(1 + (e^eps - 1)/beta^2)", "src/pysketch/privacy/subsampling.py",
     "return math.log1p(math.expm1(eps) / beta)",
     "return math.log1p(math.expm1(eps) / beta ** 2)",
     [T + "::test_amplification_calibrates_at_the_pre_subsampling_budget",
      T + "::test_release_path_audit_ci_size[data_subsampling_amplification]"]),
    ("pilot budget thirds -> halves", "src/pysketch/privacy/moments.py",
     "e = epsilon / 3.0", "e = epsilon / 2.0",
     [T + "::test_moments_sensitivities_and_budget_thirds",
      T + "::test_release_path_audit_ci_size[pilot_mean_and_spread]"]),
    ("pilot sums in data units, sensitivities in the public unit", "src/pysketch/privacy/moments.py",
     "Z = (X - c0) / unit", "Z = X - c0",
     [T + "::test_release_path_audit_ci_size[pilot_mean_and_spread]"]),
    ("pilot box check removed (records outside the box)", "src/pysketch/privacy/moments.py",
     "if ((X < lower) | (X > upper)).any():", "if False:",
     [P + "::test_private_tools_reject_bad_input"]),
    ("ball mean L1 = R sqrt(d) -> R", "src/pysketch/privacy/moments.py",
     "mech = Laplace(epsilon, l2 * math.sqrt(d), insecure_seed=src)",
     "mech = Laplace(epsilon, l2, insecure_seed=src)",
     [T + "::test_moments_sensitivities_and_budget_thirds",
      T + "::test_release_path_audit_ci_size[ball_mean_laplace_add_remove]"]),
    ("ball mean replace factor 2 dropped", "src/pysketch/privacy/moments.py",
     'l2 = radius * (2.0 if neighbouring == "replace" else 1.0)', "l2 = radius",
     [T + "::test_moments_sensitivities_and_budget_thirds"]),
    ("PCA charges the sketch's share only", "src/pysketch/pca.py",
     'budget = Budget(eps, plan.delta + (delta * share if plan.mechanism == "gaussian" else 0.0),\n'
     '                        neighbouring=self.neighbouring, what=type(self).__name__ + ".fit")',
     'budget = Budget(eps * (1 - share), plan.delta,\n'
     '                        neighbouring=self.neighbouring, what=type(self).__name__ + ".fit")',
     [T + "::test_pca_private_fit_charges_the_sum_of_its_parts"]),
    ("rfm scaling sensitivity sqrt(1 + 2d + 2) -> sqrt(1 + d + 2)", "src/pysketch/rfm/scaling.py",
     "return math.sqrt(1.0 + 2.0 * d + 2.0)", "return math.sqrt(1.0 + d + 2.0)",
     [T + "::test_rfm_scaling_sensitivity_is_the_largest_change"]),
    ("rfm SSP label sensitivity halved", "src/pysketch/rfm/ssp.py",
     "return s * math.sqrt((1.0 + a2) / 2.0), s * label_radius, s",
     "return s * math.sqrt((1.0 + a2) / 2.0), 0.5 * s * label_radius, s",
     ["tests/test_rfm_ssp.py::test_ssp_release_privacy_audit_ci_size"]),
    ("SJLT L1 sensitivity sqrt(s) -> 1", "src/pysketch/operators.py",
     "            return math.sqrt(self.s)\n", "            return 1.0\n",
     [T + "::test_distance_release_sensitivities", "tests/test_distances.py::test_sjlt_laplace_privacy_audit"]),
    ("one-hot (M2M hist) sensitivity halved", "src/pysketch/features.py",
     "return k if norm == 1 else math.sqrt(k)", "return 0.5 * k if norm == 1 else math.sqrt(k)",
     # the audit alone caught it in one run and not in the next (its power at CI size is about
     # 0.5 eps, the fault's ratio e^{1.5 eps}): the brute-force sensitivity test is exact
     ["tests/test_onehot_maps.py::test_sensitivities_are_attained_and_not_exceeded",
      T + "::test_release_path_audit_ci_size[m2m_hist_release]"]),
    ("quadratic replace factor dropped", "src/pysketch/features.py",
     "base *= 2.0 if norm == 1 else math.sqrt(2.0)", "base *= 1.0",
     ["tests/test_quadratic.py::test_replace_is_twice_add_remove_in_l1_and_sqrt2_in_l2"]),
    ("second_moment L1 sensitivity ||z||_1^2 / sqrt 2 -> / 2", "src/pysketch/features.py",
     "+ l1 * l1 / math.sqrt(2.0)",
     "+ l1 * l1 / 2.0",
     ["tests/test_second_moment.py::test_sensitivities_are_attained_and_never_exceeded",
      T + "::test_release_path_audit_ci_size[second_moment_laplace_add_remove]"]),
    ("second_moment replace factors dropped", "src/pysketch/features.py",
     "                    base *= 2.0\n",
     "                    base *= 1.0\n",
     ["tests/test_second_moment.py::test_sensitivities_are_attained_and_never_exceeded"]),
    ("second_moment offset left out of L2", "src/pysketch/features.py",
     "                base = R2 + A2\n",
     "                base = R2 + 0.0 * A2\n",
     ["tests/test_second_moment.py::test_offset_sensitivities_are_attained_and_never_exceeded",
      T + "::test_release_path_audit_ci_size[second_moment_offset_gaussian]"]),
    # the comparison baselines (tests/test_privacy_audits_baselines.py)
    ("DPLloyd: each iteration at the whole epsilon (no eps/T)", "src/pysketch/baselines/kmeans.py",
     "mech = Laplace(eps / T, sens, insecure_seed=source)",
     "mech = Laplace(eps, sens, insecure_seed=source)",
     [TB + "::test_baseline_audit_ci_size[dplloyd_full_run]"]),
    ("DPLloyd: the count dropped from the sensitivity", "src/pysketch/baselines/kmeans.py",
     "sens = 1.0 + float(half.sum())", "sens = float(half.sum())",
     [TB + "::test_baseline_audit_ci_size[dplloyd_full_run]"]),
    ("laplace_moments: sensitivity from the upper end only", "src/pysketch/baselines/statistics.py",
     "total += float(np.maximum(np.abs(lo) ** k, np.abs(hi) ** k).sum())",
     "total += float((np.abs(hi) ** k).sum())",
     [TB + "::test_baseline_audit_ci_size[moments_add_remove]"]),
    ("laplace_histogram: replace factor 2 dropped", "src/pysketch/baselines/statistics.py",
     'sens = float(d) if relation == "add_remove" else 2.0 * d', "sens = float(d)",
     [TB + "::test_baseline_audit_ci_size[histogram_replace]"]),
    ("laplace_counting_queries: each query at epsilon_Q, not epsilon_Q / q", "src/pysketch/baselines/statistics.py",
     "mech = Laplace(eps_q, float(q), insecure_seed=source)",
     "mech = Laplace(eps_q, 1.0, insecure_seed=source)",
     [TB + "::test_baseline_audit_ci_size[counting_queries_add_remove]"]),
    ("logistic objective perturbation: b's rate eps'/2 -> eps'", "src/pysketch/baselines/erm.py",
     "beta = eps_prime / 2.0", "beta = eps_prime",
     ["tests/test_m2m_baselines.py::test_objective_perturbation_draws_b_with_rate_epsilon_prime_over_2"]),
    ("distances.release charges no accountant", "src/pysketch/distances/release.py",
     'rows = _rows_part(epsilon, delta, mechanism, "distances.release", accountant, insecure_seed)',
     'rows = _rows_part(epsilon, delta, mechanism, "distances.release", None, insecure_seed)',
     ["tests/test_distances.py::test_releases_charge_the_accountant_once_per_call_before_any_noise"]),
    ("PrivateJLTransformer: dask release and transform charge nothing", "src/pysketch/distances/transformer.py",
     'Budget(eps, delta, neighbouring="replace", what=type(self).__name__).charge(self.accountant)',
     'Budget(eps, delta, neighbouring="replace", what=type(self).__name__).charge(None)',
     ["tests/test_distances.py::test_jl_transformer_charges_each_release_once"]),
]


def run_tests(repo, python, args):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYSKETCH_NUM_THREADS="1")
    cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    return proc.returncode, time.perf_counter() - t, proc.stdout[-2000:] + proc.stderr[-2000:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="a clone of pysketch (its files are modified and restored)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter of the clone's environment")
    ap.add_argument("--only", action="append", default=None,
                    help="run only the faults whose name contains this text (repeatable: any of them)")
    args = ap.parse_args(argv)
    repo = os.path.abspath(args.repo)
    if os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")) == repo:
        print("refusing to mutate the working tree this script lives in: pass a clone", file=sys.stderr)
        return 2
    faults = [f for f in FAULTS if args.only is None or any(o in f[0] for o in args.only)]
    # every text must be found exactly once, before anything is changed
    for name, path, old, new, _ in faults:
        with open(os.path.join(repo, path), encoding="utf-8") as fh:
            n = fh.read().count(old)
        if n != 1:
            print(f"fault {name!r}: the old text occurs {n} times in {path}", file=sys.stderr)
            return 2
    # baseline: the named tests pass on the unmodified clone
    base_args = []
    for _, _, _, _, tests in faults:
        base_args.extend(a for a in tests if a.startswith("tests/"))
    rc, sec, out = run_tests(repo, args.python, sorted(set(base_args)))
    print(f"baseline ({len(set(base_args))} test selections): exit {rc}, {sec:.1f} s")
    if rc != 0:
        print(out)
        return 1
    rows, missed = [], 0
    for name, path, old, new, tests in faults:
        full = os.path.join(repo, path)
        with open(full, encoding="utf-8") as fh:
            original = fh.read()
        try:
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(original.replace(old, new, 1))
            rc, sec, out = run_tests(repo, args.python, tests)
        finally:
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(original)
        caught = rc == 1
        status = "yes" if caught else ("ERROR" if rc not in (0, 1) else "NO")
        missed += not caught
        shown = " ".join(t.replace("tests/", "").replace("::test_", "::") for t in tests)
        rows.append((name, path.replace("src/pysketch/", ""), shown, status, sec))
        print(f"  {status:5s} {sec:6.1f}s  {name}", flush=True)
        if not caught:
            print(out)
    print()
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'fault':{w0}s}  {'file':{w1}s}  caught  seconds  tests run")
    for name, path, shown, status, sec in rows:
        print(f"{name:{w0}s}  {path:{w1}s}  {status:6s}  {sec:7.1f}  {shown}")
    print(f"\n{len(rows) - missed} of {len(rows)} faults caught")
    return 0 if missed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
