"""Every ```python block of README.md runs as given (issue 39): each in a fresh interpreter,
from an empty working directory (the blocks that save write their files there), with
RuntimeWarning and FutureWarning as errors (a renamed parameter warns with FutureWarning;
the suite turns RuntimeWarning into errors too). A block that needs more than TIMEOUT
seconds fails: the README's examples are meant to run in seconds."""

import os
import re
import subprocess
import sys

import pytest

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO_DIR, "README.md")
TIMEOUT = 120
#: The fewest python blocks the README is known to hold: a block whose fence is mistyped
#: (```Python, ``` python) would otherwise drop out of the test unseen.
MIN_BLOCKS = 8


def _python_blocks(text):
    """(first line number, code) of every fenced block opened by exactly ```python."""
    blocks, code, start = [], None, None
    for number, line in enumerate(text.splitlines(), 1):
        if code is None:
            if line.rstrip() == "```python":
                code, start = [], number + 1
        elif line.rstrip() == "```":
            blocks.append((start, "\n".join(code) + "\n"))
            code = None
        else:
            code.append(line)
    assert code is None, f"README.md: the ```python block opened before line {start} is never closed"
    return blocks


def _blocks():
    if not os.path.exists(README):
        return []
    with open(README, encoding="utf-8") as f:
        return _python_blocks(f.read())


BLOCKS = _blocks()


def test_the_readme_blocks_are_found():
    if not os.path.exists(README):
        pytest.skip("no README.md next to the tests")
    assert len(BLOCKS) >= MIN_BLOCKS
    with open(README, encoding="utf-8") as f:
        fences = re.findall(r"^```\s*[Pp]y\w*\s*$", f.read(), flags=re.M)
    assert len(fences) == len(BLOCKS), "a python block is fenced other than with ```python"


def test_the_block_reader():
    text = "x\n```python\na = 1\n\nb = 2\n```\n```\npip install .\n```\n```python\nc = 3\n```\n"
    assert _python_blocks(text) == [(3, "a = 1\n\nb = 2\n"), (11, "c = 3\n")]
    with pytest.raises(AssertionError, match="never closed"):
        _python_blocks("```python\na = 1\n")


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_readme_block_runs(line, code, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    try:
        result = subprocess.run(
            [sys.executable, "-W", "error::RuntimeWarning", "-W", "error::FutureWarning", "-c", code],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"README.md, the block at line {line}: still running after {TIMEOUT} s")
    assert result.returncode == 0, (
        f"README.md, the block at line {line} fails:\n{code}\n{result.stderr[-3000:]}")
