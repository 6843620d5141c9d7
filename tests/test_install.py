"""The package as users install it: its sdist and its wheel hold every file it reads, and the
wheel, installed on its own, indexes exactly the tasks and groups the checkout does.

``python -m build`` makes the sdist, then the wheel from that sdist (the way ``pip install`` of an
sdist goes). Each must hold every file git tracks under ``src/wsc_tasks`` (a base config left out
of the package data once made an installed wheel index 8 of the checkout's 58 names); the
wheel, installed into a folder of its own and imported from there by a fresh interpreter, must
index the checkout's names. CI installs the package as users do (not editable) and sets
``WSC_TASKS_REQUIRE_INSTALLED=1``: the whole suite must then have imported that install.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from conftest import REPO

import wsc_tasks
from wsc_tasks.cli import version_line

pytestmark = pytest.mark.slow

INDEX = """
import json, sys
from lm_eval.tasks import TaskManager
import wsc_tasks
from wsc_tasks.paths import include_path
manager = TaskManager(include_path=str(include_path()), include_defaults=False)
print(json.dumps({"package": wsc_tasks.__file__, "version": wsc_tasks.__version__,
                  "names": sorted(manager.all_tasks)}))
"""


def _tracked() -> set[str]:
    """The package's files as git tracks them, relative to ``src/``."""
    done = subprocess.run(
        ["git", "ls-files", "src/wsc_tasks"], cwd=REPO, capture_output=True, text=True
    )
    if done.returncode != 0 or not done.stdout:
        pytest.skip("not a git checkout: the package's files are not known")
    return {line.removeprefix("src/") for line in done.stdout.splitlines()}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel ``python -m build`` makes of the checkout (no isolation: the
    test extra has setuptools and build)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_wheel_holds_every_file_of_the_package_and_nothing_else(built):
    with zipfile.ZipFile(built["wheel"]) as wheel:
        held = {n for n in wheel.namelist() if n.startswith("wsc_tasks/")}
    assert held == _tracked()


def test_the_sdist_holds_every_file_of_the_package(built):
    with tarfile.open(built["sdist"]) as sdist:
        names = sdist.getnames()
    root = names[0].split("/")[0]
    assert _tracked() <= {n.removeprefix(f"{root}/src/") for n in names}
    assert f"{root}/pyproject.toml" in names


def _index(folder: Path, where: Path) -> dict:
    """What a fresh interpreter whose first path entry is ``folder`` indexes (run in ``where``,
    so that no checkout is on its path)."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    done = subprocess.run([sys.executable, "-c", INDEX], cwd=where, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_installed_wheel_indexes_what_the_checkout_indexes(built, tmp_path):
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
         str(site), str(built["wheel"])],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    installed = _index(site, tmp_path)
    checkout = _index(REPO / "src", tmp_path)
    assert Path(installed["package"]).is_relative_to(site)
    assert Path(checkout["package"]).is_relative_to(REPO / "src")
    assert installed["names"] == checkout["names"]
    assert len(installed["names"]) >= 58 and "wsc_group" in installed["names"]
    assert installed["version"] == wsc_tasks.__version__ in built["wheel"].name


def test_one_version_everywhere():
    assert metadata.version("wsc-tasks") == wsc_tasks.__version__
    assert version_line().startswith(f"wsc-tasks {wsc_tasks.__version__} (lm-eval ")
    done = subprocess.run(["wsc-tasks", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == version_line()


def test_the_suite_runs_on_the_package_as_installed():
    """Under CI the tests import the package pip installed from its wheel, not the checkout's
    sources: a file left out of the wheel fails the suite there."""
    if os.environ.get("WSC_TASKS_REQUIRE_INSTALLED") != "1":
        pytest.skip("WSC_TASKS_REQUIRE_INSTALLED is not 1 (CI sets it after `pip install .`)")
    assert not Path(wsc_tasks.__file__).resolve().is_relative_to(REPO / "src")
    direct = metadata.distribution("wsc-tasks").read_text("direct_url.json") or "{}"
    assert not json.loads(direct).get("dir_info", {}).get("editable", False)


def test_constraints_pin_versions_any_machine_can_install():
    """constraints.txt, regenerated by ``pip freeze``, pins released versions only: never the
    package itself (a frozen local path makes ``pip install -c constraints.txt .`` fail
    everywhere) nor any other path or URL."""
    pins = [
        line.split("#")[0].strip()
        for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    ]
    pins = [pin for pin in pins if pin]
    assert pins and all(
        re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[A-Za-z0-9_.+\-!]+", p) for p in pins
    ), [p for p in pins if "==" not in p or "@" in p]
    assert not [
        p for p in pins if re.split(r"[=\[]", p)[0].lower().replace("_", "-") == "wsc-tasks"
    ]
