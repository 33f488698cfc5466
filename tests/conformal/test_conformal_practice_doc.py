"""The code blocks of docs/conformal-practice.md run as printed."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformal-practice.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_practice_guide_code_runs(code, capsys):
    exec(compile(code, str(DOC), "exec"), {})
    assert len(BLOCKS) == 3
