import subprocess
import sys

from typer.testing import CliRunner

from icml25 import __version__
from icml25.cli import app

runner = CliRunner()


def _fresh_python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_importing_the_cli_loads_no_heavy_dependency():
    loaded = _fresh_python(
        "import sys, icml25.cli; "
        "print(sorted(m for m in ('torch', 'fastapi', 'sqlalchemy', 'openai', 'transformers') "
        "if m in sys.modules))")
    assert loaded == "[]"


def test_help_lists_subsystems_without_importing_them():
    # what keeps the help fast is that no room (nor torch) is imported for it; its cost is a
    # benchmark's business, not a test's (a busy machine stretches any timing)
    code = ("import sys, time; t = time.process_time(); from icml25.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('ELAPSED', time.process_time() - t); "
            "print('ROOMS', sorted(m for m in sys.modules if m.startswith('icml25.') "
            "and m.count('.') == 1 and m not in ('icml25.cli', 'icml25.core')))")
    out = _fresh_python(code)
    assert "reproduce" in out and "conformal" in out
    assert "ROOMS []" in out
    assert float(out.split("ELAPSED")[1].split()[0]) > 0


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"icml25 {__version__}"


def test_python_dash_m_works():
    out = subprocess.run([sys.executable, "-m", "icml25", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("icml25 ")


def test_a_subsystem_is_imported_only_when_invoked():
    code = ("import sys; from icml25.cli import get_app\n"
            "get_app(['reproduce', '--list'])\n"
            "print('conformal.cli' in ' '.join(sys.modules))")
    assert _fresh_python(code) == "False"


def test_reproduce_list_and_unknown_name(tmp_path):
    listed = runner.invoke(app, ["reproduce", "--list"])
    assert listed.exit_code == 0
    bad = runner.invoke(app, ["reproduce", "no-such-experiment", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "no experiment" in bad.output
