"""The command line: `pysketch`, `pysketch info`, `python -m pysketch`."""

import re
import subprocess
import sys

import pytest

import pysketch
from pysketch.cli import main


def test_info_prints_version_simd_threads_and_a_timing(capsys):
    assert main(["info", "--n", "64", "--rows", "8", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert f"pysketch {pysketch.__version__}" in out
    assert f"SIMD level: {pysketch.simd_level()} (max {pysketch.max_simd_level()}" in out
    assert f"threads: {pysketch.get_num_threads()}" in out
    assert "self-check: fwht matches its definition" in out
    assert re.search(r"^fwht float32 n=64: [0-9.]+(e[-+][0-9]+)? us per row \(batch of 8 rows, best of 3\)$", out, re.M)


def test_no_command_is_info(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "fwht float32 n=1024:" in out and "batch of 4096 rows, best of 20" in out


@pytest.mark.parametrize("argv", [["info", "--n", "1000"], ["info", "--rows", "0"], ["demo"], ["--bogus"]])
def test_bad_arguments_exit_with_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: pysketch" in capsys.readouterr().err


def test_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "pysketch", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.strip() == f"pysketch {pysketch.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "pysketch", "info", "--rows", "4", "--repeat", "1"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "fwht float32 n=1024:" in done.stdout
