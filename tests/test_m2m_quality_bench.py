"""benchmarks/quality/m2m_quality.py runs (a smoke run of its quickest parts) and prints its
tables and checks."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_m2m_quality_quick_queries_part_runs():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, os.path.join("benchmarks", "quality", "m2m_quality.py"), "--quick",
                          "--parts", "queries"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "Counting queries at total epsilon = 1" in out.stdout
    for method in ("rff", "race", "hist", "direct"):
        assert f"\n{method} |" in out.stdout
