"""The layout of benchmarks/: the asv suites import nothing from benchmarks/ (asv imports
every module of benchmarks/asv, and must not run the scripts), and every script of
benchmarks/quality and benchmarks/reports starts from the repository root."""

import ast
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
SCRIPTS = sorted(glob.glob(os.path.join(BENCH, "quality", "*.py")) + glob.glob(os.path.join(BENCH, "reports", "*.py")))


def _imported_modules(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield "." if node.level else node.module.split(".")[0]


def test_asv_is_configured_on_the_asv_folder():
    with open(os.path.join(ROOT, "asv.conf.json"), encoding="utf-8") as f:
        assert '"benchmark_dir": "benchmarks/asv"' in f.read()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(BENCH, "asv", "*.py"))), ids=os.path.basename)
def test_asv_suites_import_only_libraries(path):
    scripts = {os.path.splitext(os.path.basename(p))[0] for p in SCRIPTS} | {"_timing", "benchmarks", "."}
    assert not scripts & set(_imported_modules(path))


def test_there_are_scripts():
    names = {os.path.relpath(p, BENCH) for p in SCRIPTS}
    assert {os.path.join("quality", "kmeans_quality.py"), os.path.join("quality", "real_quality.py"),
            os.path.join("reports", "sketch_report.py")} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=os.path.basename)
def test_script_starts_from_the_repository_root(path):
    proc = subprocess.run([sys.executable, os.path.relpath(path, ROOT), "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("usage:")


def test_every_mutation_check_fault_still_finds_its_line():
    # benchmarks/reports/mutation_check.py refuses a fault whose old text is not exactly once
    # in its file; this keeps the list in step with the code it mutates
    import importlib.util

    if not os.path.isdir(os.path.join(ROOT, "src", "pysketch")):
        pytest.skip("needs the source tree (the wheel's test run has only tests/ and benchmarks/)")
    spec = importlib.util.spec_from_file_location("mutation_check", os.path.join(BENCH, "reports",
                                                                                 "mutation_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert len(module.FAULTS) >= 10
    for name, path, old, new, tests in module.FAULTS:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert f.read().count(old) == 1, f"{name}: {old!r} is not exactly once in {path}"
        assert old != new and tests
        for t in tests:
            assert os.path.exists(os.path.join(ROOT, t.split("::")[0])), t
