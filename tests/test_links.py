"""Every relative link of the tracked Markdown resolves: its file exists and, for a Markdown file
with an ``#anchor``, a heading with that GitHub anchor or an explicit ``<a id|name="…">`` is there.

A page that moves or a heading that is reworded breaks the links to it; this test names each one.
"""

import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"(`+).+?\1", re.S)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
EXPLICIT = re.compile(r"<a\s[^>]*?\b(?:id|name)=[\"']([^\"']+)[\"']")


def _tracked() -> list[str]:
    found = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        return []
    return found.stdout.split()


TRACKED = _tracked()


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: its text (a link's text, not its target), lower-case, every
    character but letters, digits, spaces, ``-`` and ``_`` removed, each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file: its headings' (a repeated one gets ``-1``, ``-2``, … as on
    GitHub) and its explicit ``<a id>`` and ``<a name>``."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set(EXPLICIT.findall(text))
    for heading in HEADING.findall(text):
        anchor = github_anchor(heading)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        out.add(anchor if count == 0 else f"{anchor}-{count}")
    return frozenset(out)


def broken_links(name: str, root: Path = REPO) -> list[str]:
    """The relative links of a Markdown file under ``root`` that lead nowhere, each with why."""
    path = root / name
    text = CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("//"):
            continue  # a URL (https:, mailto:): not this repository's
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target}: no file {os.path.relpath(dest, root)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading or <a id> gives #{anchor}")
    return broken


def test_the_anchor_rule_is_githubs():
    """Hand-checked against GitHub's rendering of headings of this repository."""
    assert github_anchor("`run`: a run's phases, requests and token positions") == (
        "run-a-runs-phases-requests-and-token-positions"
    )
    assert github_anchor("Groups, Tags, and Tasks") == "groups-tags-and-tasks"
    assert github_anchor("Sweeps — Slurm & Ray") == "sweeps--slurm--ray"
    assert github_anchor("[Served](x.md) models_2") == "served-models_2"


def test_broken_links_are_found(tmp_path):
    """A missing file and a missing anchor are each named; a URL, code and a good anchor are not."""
    (tmp_path / "a.md").write_text(
        "# Top\n\n## Two words\n\n[ok](b.md#two-words) [ok](#top) [url](https://x.org/y)\n"
        "`[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n"
        "[gone](nowhere.md) [no anchor](b.md#three)\n",
        encoding="utf-8",
    )
    (tmp_path / "b.md").write_text("# B\n\n## Two words\n", encoding="utf-8")
    assert broken_links("a.md", tmp_path) == [
        "nowhere.md: no file nowhere.md",
        "b.md#three: no heading or <a id> gives #three",
    ]


@pytest.mark.skipif(not TRACKED, reason="not a git checkout (an sdist): no tracked Markdown")
@pytest.mark.parametrize("name", TRACKED)
def test_every_relative_link_resolves(name):
    assert broken_links(name) == [], f"{name}: fix or remove these links"
