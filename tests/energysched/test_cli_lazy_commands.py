"""The command line imports a command's module only when that command is used."""

from __future__ import annotations

from click.testing import CliRunner

from energysched.cli import _COMMAND_MODULES, main
from tests.fresh_python import fresh_python


def test_every_command_is_listed_with_its_modules() -> None:
    # --help loads every module: each command it shows must be one the table names,
    # or `energysched NAME` would not find it before --help was asked
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0, result.output
    shown = set(main.list_commands(None))  # type: ignore[arg-type]
    assert shown == set(_COMMAND_MODULES)
    for name in shown:
        assert name in result.output


def test_run_help_loads_no_other_command_module() -> None:
    code = (
        "import sys\n"
        "from energysched.cli import main\n"
        "try:\n"
        "    main(['run', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('energysched.cli.')))\n"
    )
    loaded = fresh_python(code).splitlines()[-1]
    assert "energysched.cli.run_cmd" in loaded
    for other in ("experiment_cmd", "generate_cmd", "predictors_cmd", "workload_cmd"):
        assert other not in loaded
