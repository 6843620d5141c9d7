"""Every ``--help`` fits on one screen, starts with its usage line, says what the command
really does by default, names no path of this machine and offers no flag ``run`` refuses."""

from __future__ import annotations

import os
import sys

import pytest

from wsc_tasks.cli import COMMANDS, DATA_ACTIONS
from wsc_tasks.cli import run as cli_run
from wsc_tasks.tasks.flags import WHY

SCREEN_LINES, SCREEN_COLUMNS = 50, 80  # a terminal's 80 columns (COLUMNS=80)
HELPS = [
    [],
    *([name] for name in COMMANDS),
    *(["data", action] for action in DATA_ACTIONS),
    ["sweep", "--launcher", "ray"],
    ["sweep", "--launcher", "slurm"],
]


def _help(command: list[str]) -> str:
    """The help as a user sees it (in this process: one import of the package for all)."""
    import contextlib
    import io

    from wsc_tasks import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = cli.main([*command, "--help"])
        except SystemExit as error:  # argparse's help exits 0
            code = error.code
    assert code == 0, command
    return out.getvalue()


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(SCREEN_COLUMNS))
        return {" ".join(command): _help(command) for command in HELPS}


def test_every_help_fits_on_a_screen_with_a_usage_line(helps):
    for command, text in helps.items():
        lines = text.rstrip("\n").split("\n")
        words = command.split()
        name = " ".join(words[:2] if words[:1] == ["data"] else words[:1])
        assert lines[0].startswith(f"usage: wsc-tasks {name}".rstrip()), command
        assert len(lines) <= SCREEN_LINES, (command, len(lines))
        assert max(map(len, lines)) <= SCREEN_COLUMNS, command
        assert "Traceback" not in text


def test_no_help_names_a_path_of_this_machine(helps):
    import lm_eval

    from wsc_tasks.paths import include_path

    folders = [os.path.expanduser("~"), str(include_path()), os.path.dirname(lm_eval.__file__)]
    folders += [p for p in sys.path if p.startswith("/") and len(p) > 4]
    for command, text in helps.items():
        assert not any(folder in text for folder in folders), command
        assert "site-packages" not in text and "/work/" not in text, command


def test_run_help_gives_the_defaults_run_uses_and_no_refused_flag(helps):
    text = helps["run"]
    assert f"default {cli_run.DEFAULT_BATCH_SIZE}" in text and "--batch_size" in text
    assert f"default {cli_run.DEFAULT_TASKS}" in text
    for flag in ("--model_args", "--output_path", "--log_samples", "--limit", "--metadata"):
        assert flag in text
    scored, asked = text.split("The question tasks", 1)
    for flag in WHY:  # --apply_chat_template, --gen_kwargs, …: refused, so never offered
        assert flag not in scored, flag  # but to the question tasks, which take them
    assert "--apply_chat_template" in asked and "docs/chat.md" in asked
    assert "lm_eval run --help" in text
    assert "SmolLM2-135M-Instruct" in text and "default 1\n" not in text


def test_subcommand_helps_are_their_own(helps):
    assert "download the missing" in helps["data fetch"].lower()
    assert "stats" not in helps["data fetch"]  # not the list of every data action again
    assert "--rank-task" in helps["sweep"] and "--partition" not in helps["sweep"]
    assert "--partition" in helps["sweep --launcher slurm"]
    assert "--max-parallel" in helps["sweep --launcher slurm"]
    assert "--ray-address" in helps["sweep --launcher ray"]
    for name in COMMANDS:
        assert name in helps[""]


def test_help_anywhere_on_runs_command_line_is_runs_help(capsys):
    assert cli_run.run_lm_eval(["--tasks", "no_such_task", "--help"]) == 0
    assert capsys.readouterr().out == cli_run.HELP


def test_every_launcher_setting_states_its_default(helps):
    """A setting with a value states it, or what happens without one (docs/sweeps.md)."""
    from wsc_tasks.sweep.launchers import LAUNCHERS

    for name, cls in LAUNCHERS.items():
        text = " ".join(helps.get(f"sweep --launcher {name}", helps["sweep"]).split())
        for setting in cls.settings:
            if setting.kind != "value":
                continue
            assert "(default" in setting.shown_help, (name, setting.name)
            assert setting.shown_help.replace("%%", "%") in text, (name, setting.name)
