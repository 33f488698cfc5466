"""The code blocks of docs/conformal-practice.md run as printed."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformal-practice.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
# the covariate-shift block fits a cross-validated domain classifier (~30 s on a loaded machine)
PARAMS = [pytest.param(code, id=f"block{i}",
                       marks=[pytest.mark.slow] if "X_test=" in code else [])
          for i, code in enumerate(BLOCKS)]


def test_practice_guide_has_its_three_examples():
    assert len(BLOCKS) == 3


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("code", PARAMS)
def test_practice_guide_code_runs(code):
    exec(compile(code, str(DOC), "exec"), {})
