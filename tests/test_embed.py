"""The C and C++ API shipped inside the installed package (docs/c_api.md): get_include() holds
fht.h and the header-only C++ core, get_library_dir() the C library, and a C and a C++
program build and run against them when a compiler is on PATH.

An editable install maps the package onto the source tree and installs neither directory:
there these tests are skipped (and get_include / get_library_dir raise FileNotFoundError)."""

import os
import re
import shutil
import subprocess
import sys

import pytest

import pysketch
from pysketch import _embed, config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

#: meson-python's editable installs import the package through their own loader module
EDITABLE = type(pysketch.__spec__.loader).__module__.endswith("_editable_loader")

needs_install = pytest.mark.skipif(
    EDITABLE, reason="editable install: the headers and libpysketch_fht.a are installed only by a regular "
                     "install (pip install . or the wheel), not mapped from the source tree")

#: the headers the documented C++ API (docs/c_api.md) includes, directly or not
CPP_API = ("simd.hpp", "hadamard.hpp", "parallel.hpp", "scratch.hpp", "operators.hpp", "dense.hpp",
           "sincos.hpp", "features.hpp", "sketch.hpp")
C_API = ("fht_float", "fht_double", "fht_float_oop", "fht_double_oop", "fht_float_batch", "fht_double_batch",
         "fht_float_batch_oop", "fht_double_batch_oop", "fht_float_batch_diag", "fht_double_batch_diag",
         "fht_float_batch_oop_diag", "fht_double_batch_oop_diag", "fht_float_batch_oop_diags",
         "fht_double_batch_oop_diags", "fht_float_cols", "fht_double_cols", "fht_get_simd_level",
         "fht_max_simd_level", "fht_simd_level_name", "fht_set_simd_level")


def test_exported():
    assert pysketch.get_include is _embed.get_include
    assert pysketch.get_library_dir is _embed.get_library_dir
    assert {"get_include", "get_library_dir"} <= set(pysketch.__all__)


@pytest.mark.skipif(not EDITABLE, reason="a regular install: the headers are there")
def test_editable_install_says_why_there_are_no_headers():
    with pytest.raises(FileNotFoundError, match="editable install"):
        pysketch.get_include()
    with pytest.raises(FileNotFoundError, match="editable install"):
        pysketch.get_library_dir()


@needs_install
def test_include_dir_holds_the_c_header_and_the_cpp_core():
    inc = pysketch.get_include()
    assert os.path.isabs(inc) and os.path.dirname(inc) == os.path.dirname(os.path.abspath(pysketch.__file__))
    with open(os.path.join(inc, "fht.h"), encoding="utf-8") as f:
        header = f.read()
    for name in C_API:
        assert re.search(rf"\b{name}\(", header), f"fht.h does not declare {name}"
    shipped = set(os.listdir(os.path.join(inc, "pysketch")))
    assert set(CPP_API) <= shipped
    # self-contained: every include of a shipped header is shipped, and none reaches Python
    for name in sorted(shipped):
        if not name.endswith(".hpp"):
            continue
        with open(os.path.join(inc, "pysketch", name), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r'#include\s+"([^"]+)"', text):
            assert os.path.isfile(os.path.join(inc, target)), f"{name} includes {target}, which is not shipped"
        assert not re.search(r"#include\s+[<\"](pybind11|Python\.h)", text), f"{name} needs Python"


@needs_install
def test_library_dir_holds_the_static_library():
    lib = pysketch.get_library_dir()
    path = os.path.join(lib, f"lib{_embed.LIBRARY_NAME}.a")
    with open(path, "rb") as f:
        assert f.read(8) == b"!<arch>\n"  # a complete ar archive, not a thin one


@needs_install
def test_config_prints_the_flags(capsys):
    assert config.main(["--cflags", "--libs"]) == 0
    assert capsys.readouterr().out.split() == [
        "-I" + pysketch.get_include(), "-L" + pysketch.get_library_dir(), "-lpysketch_fht"]
    assert config.main(["--include"]) == 0
    assert capsys.readouterr().out.strip() == pysketch.get_include()
    assert config.main(["--bad"]) == 2


def _compiler(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no compiler on PATH (looked for {', '.join(names)})")


def _build_and_run(tmp_path, source, command):
    if not os.path.isfile(source):
        pytest.skip(f"{source} is not here (tests run outside the source tree)")
    exe = str(tmp_path / "example")
    flags = ["-I" + pysketch.get_include(), "-L" + pysketch.get_library_dir(), "-l" + _embed.LIBRARY_NAME]
    built = subprocess.run(command + [source] + flags + ["-o", exe], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.rstrip().endswith("OK")


@needs_install
def test_c_example_builds_and_runs(tmp_path):
    cc = _compiler("cc", "gcc", "clang")
    _build_and_run(tmp_path, os.path.join(EXAMPLES, "c", "fht_example.c"), [cc, "-std=c99", "-O2"])


@needs_install
def test_cpp_example_builds_and_runs(tmp_path):
    cxx = _compiler("c++", "g++", "clang++")
    _build_and_run(tmp_path, os.path.join(EXAMPLES, "cpp", "sketch_example.cpp"),
                   [cxx, "-std=c++17", "-O2", "-pthread"])


def test_config_without_arguments_prints_usage():
    done = subprocess.run([sys.executable, "-m", "pysketch.config"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: python -m pysketch.config" in done.stderr
