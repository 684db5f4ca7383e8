"""benchmarks/quality/rfm_quality.py runs (smoke runs of its quick parts) and prints its tables
and checks."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*parts):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env.pop("PYSKETCH_DPRFM_DATA", None)
    return subprocess.run([sys.executable, os.path.join("benchmarks", "quality", "rfm_quality.py"), "--quick",
                           "--parts", *parts], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_rfm_quality_quick_nsweep_fairness_and_table1_parts_run():
    out = _run("nsweep", "fairness", "table1")
    assert out.returncode == 0, out.stderr
    assert "check diamonds: ssp beats the trivial predictor at every n_train >=" in out.stdout
    assert "| ssp / nonprivate |" in out.stdout
    assert "### Fairness on diamonds" in out.stdout
    assert "table1: skipped" in out.stdout
