"""report.html and leaderboard.html: content, examples, and a real browser (headless Chromium).

The reports are built from a cut-down copy of the committed SmolLM2 and chance outputs
(results/*/lm_eval: three WSC266 tasks), so no model runs. The browser test needs Debian's
``chromium`` and ``chromium-driver``; without them it is skipped, unless
WSC_TASKS_REQUIRE_BROWSER=1 (CI), where it fails.
"""

from __future__ import annotations

import csv
import html
import importlib.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from wsc_tasks import leaderboard
from wsc_tasks.cli import report
from wsc_tasks.data.problems import Problem
from wsc_tasks.paths import SWEEP_DONE
from wsc_tasks.report import examples

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODELS = ("smollm2-135m", "chance")
TASKS = ("wsc266", "wsc266_switched", "wsc266_switched_consistency")
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


LIMITED = "chance"  # its copy says it was run with --limit 133 (all of wsc266: same figures)


def _cut_down(source: Path, target: Path, limit: float | None = None) -> None:
    """The results JSON restricted to TASKS, with those tasks' samples files."""
    for path in source.rglob("results_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["results"] = {t: data["results"][t] for t in TASKS}
        data["groups"] = {}
        data["config"]["limit"] = limit
        folder = target / path.parent.relative_to(source)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / path.name).write_text(json.dumps(data), encoding="utf-8")
        stamp = path.name[len("results_") : -len(".json")]
        for task in TASKS:
            name = f"samples_{task}_{stamp}.jsonl.gz"
            shutil.copy(path.parent / name, folder / name)


@pytest.fixture(scope="module")
def sweep_out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    for name in MODELS:
        limit = 133 if name == LIMITED else None
        _cut_down(RESULTS / name / "lm_eval", out / name / "lm_eval", limit)
        (out / name / SWEEP_DONE).write_text("{}\n")
    return out


@pytest.fixture(scope="module")
def built(sweep_out, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    folders = [f"{name}={sweep_out / name / 'lm_eval'}" for name in MODELS]
    assert report.main([*folders, "--iters", "200", "--quiet", "--out", str(out)]) == 0
    return out


def test_option_scores_are_read_back_from_the_logged_requests():
    problem = Problem("p1", ("Tom thanked Bill because ", " helped."), (("Tom",), ("Bill",)), 1)
    row = {
        "arguments": {
            "gen_args_0": {"arg_0": "Tom thanked Bill because Tom", "arg_1": " helped."},
            "gen_args_1": {"arg_0": "", "arg_1": "Tom thanked Bill because Tom helped."},
            "gen_args_2": {"arg_0": "Tom thanked Bill because Bill", "arg_1": " helped."},
        },
        "resps": [[["-3.5", "False"]], [["-20.25", "False"]], [["-1.5", "False"]]],
    }
    scores = examples.request_scores(row)
    shown = examples.view(problem, scores, {"headline": 1})
    assert shown.text == "Tom thanked Bill because ___ helped."
    assert shown.partial == (-3.5, -1.5)
    assert shown.full is None  # the second option's sentence was not asked for
    assert shown.options == ("Tom", "Bill") and shown.chosen == {"headline": 1}


def test_examples_of_a_schema_task_and_of_a_consistency_task(sweep_out):
    from wsc_tasks.runs.folders import load_run

    run = load_run(sweep_out / "smollm2-135m" / "lm_eval", "smollm2-135m")
    found = examples.task_examples(run.tasks["wsc266"], "smollm2-135m")
    # 39 + 86 + 8 = 133 schemas; A = 39/133 = 0.293 and A'' = 8/133 in results/report
    assert found.counts == {"solved": 39, "half-solved": 86, "anti-solved": 8}
    assert [len(found.categories[k]) for k in examples.CATEGORIES] == [3, 3, 3]
    first = found.categories["anti-solved"][0][0]  # w1a: both problems wrong
    assert first.uid == "w1a" and first.label == 0 and first.chosen == {"headline": 1}
    assert first.partial == pytest.approx((-15.4591646194458, -15.398317337036133))
    a, b, differ, of = found.disagreements[0]
    assert (a, b, differ, of) == ("partial", "full", 104, 266)
    pairs = examples.task_examples(run.tasks["wsc266_switched_consistency"], "smollm2-135m")
    # c = 0.543 on 140 problems: 76 consistent, 64 flip
    assert pairs.n_pairs == 70 and pairs.n_flips == 64 and not pairs.schema_level
    left, right = pairs.flips[0]
    assert [p.uid for p in left] == ["w3a", "w3b"] and right[0].options == ("Susan", "Joan")


def test_report_html_is_self_contained_with_every_section(built):
    page = (built / "report.html").read_text(encoding="utf-8")
    markdown = (built / "report.md").read_text(encoding="utf-8")
    for title in re.findall(r"^## (.+)$", markdown, flags=re.M):
        assert f">{title}</h2>" in page.replace("&#x27;", "'"), title
    assert "[`report.html`](report.html)" in markdown
    figures = len(re.findall(r"^!\[", markdown, flags=re.M))
    assert page.count('class="scroll figure wide"') == figures > 0
    assert page.count('class="scroll figure narrow"') == figures  # a phone's layout of each
    assert page.count("<svg") == 2 * figures
    assert not re.search(r"""(src|href)=["'](?!#)""", page)  # nothing fetched at view time
    assert "<link" not in page and "@import" not in page
    assert "Joan made sure to thank Susan for all the help ___ had received." in page
    assert 'id="table-overview"' in page and page.count('class="filter"') >= 5


def test_notes_are_in_report_md_and_report_html_before_the_tables(built):
    page = (built / "report.html").read_text(encoding="utf-8")
    markdown = (built / "report.md").read_text(encoding="utf-8")
    note = "chance was run with --limit 133: its figures come from the first documents of each task"
    assert f"- **Note:** {note}" in markdown and f"<li><b>Note:</b> {note}" in page
    assert markdown.index(note) < markdown.index("| model |")  # right after the findings
    assert page.index('class="notes"') < page.index("<table")
    assert "Run with --limit 133: every figure is of the first documents" in markdown


def test_tasks_without_samples_and_partial_runs_are_noted_in_both_formats(sweep_out, tmp_path):
    """A run killed while writing its samples, a folder without any, a run of some documents
    (lm-eval's --samples): before, the first two were dropped from every table with a line on
    stderr only, and the third was not said at all."""
    some = shutil.copytree(sweep_out / "smollm2-135m" / "lm_eval", tmp_path / "some")
    for path in some.glob("samples_wsc266_switched_2*"):  # not the consistency task's
        path.unlink()
    [results] = some.glob("results_*.json")
    data = json.loads(results.read_text(encoding="utf-8"))
    data["n-samples"]["wsc266"]["original"] = 266  # as if --samples had chosen 133 of 266
    results.write_text(json.dumps(data), encoding="utf-8")
    none = shutil.copytree(sweep_out / "chance" / "lm_eval", tmp_path / "none")
    for path in none.glob("samples_*"):
        path.unlink()
    argv = [f"some={some}", f"none={none}", "--iters", "50", "--quiet", "--out", str(tmp_path)]
    assert report.main(argv) == 0
    notes = (
        "some: 1 task(s) were scored on some of their documents only (lm-eval's --samples), not "
        "the whole dataset: wsc266 133 of 266",
        "some: 1 of 3 task(s) have no samples file (a run stopped while writing them?), so no "
        "table has their figures: wsc266_switched",
        "none: no samples file at all (lm-eval was run without --log_samples): no table or "
        "finding has its figures; lm-eval's own are in its results file",
    )
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    for note in notes:
        assert f"- **Note:** {note}." in markdown, note
        assert f"<li><b>Note:</b> {html.escape(note)}.</li>" in page, note


LIMIT_NOTE = "chance was run with --limit 133"


def test_leaderboard_opens_with_findings_then_notes_in_every_format(sweep_out):
    """The conclusion first (one sentence per model), the notes before any table, the chance
    model set apart; every format says the same."""
    md, table, page = leaderboard.write(list(MODELS), sweep_out, "wsc266", 200, 0)
    assert (md.name, table.name, page.name) == (
        "leaderboard.md", "leaderboard.csv", "leaderboard.html"
    )  # fmt: skip
    text = md.read_text(encoding="utf-8")
    assert text.index("## Findings") < text.index(LIMIT_NOTE) < text.index("| model |")
    assert "- **smollm2-135m**: A = 0.293 [" in text
    assert "not distinguishable from chance (0.250; p = " in text
    assert "- **chance**: (--limit 133) chance model, the calibration check: A = 0.211 [" in text
    html_page = page.read_text(encoding="utf-8")
    assert html_page.index("<h2>Findings</h2>") < html_page.index('class="notes"')
    assert html_page.index(LIMIT_NOTE) < html_page.index("<table")
    assert 'id="table-leaderboard"' in html_page and 'id="table-leaderboard_chance"' in html_page
    with table.open(encoding="utf-8") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    top, chance = rows["smollm2-135m"], rows["chance"]
    assert top["rank (point estimate)"] == "1" and top["kind"] == "model"
    assert chance["rank (point estimate)"] == "" and chance["kind"] == "chance model"
    assert top["rank, 95% simultaneous low"] == "1" and chance["rank, 95% marginal high"] == ""
    assert int(top["rank, 95% simultaneous high"]) >= int(top["rank, 95% marginal high"]) >= 1
    assert LIMIT_NOTE in rows["chance"]["notes"] and not rows["smollm2-135m"]["notes"]
    assert rows["smollm2-135m"]["finding"].startswith("A = 0.293 [")
    assert float(rows["smollm2-135m"]["A"]) == pytest.approx(39 / 133, abs=1e-6)
    printed = leaderboard.printed(leaderboard.build(list(MODELS), sweep_out, "wsc266", 200, 0))
    assert printed[0].startswith("No model is shown above chance in schema accuracy A on wsc266")
    assert any(line.startswith(f"Note: {LIMIT_NOTE}") for line in printed)


def test_leaderboard_command_writes_a_sweep_folders_leaderboard_running_nothing(
    sweep_out, tmp_path, capsys
):
    from wsc_tasks.cli import main as cli

    copy = shutil.copytree(sweep_out, tmp_path / "sweep")
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.html"):
        (copy / name).unlink(missing_ok=True)
    assert cli(["leaderboard", str(copy), "--iters", "200"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("No model is shown above chance in schema accuracy A on wsc266")
    assert str(copy / "leaderboard.html") in printed
    assert "| smollm2-135m | 1 | [1, " in (copy / "leaderboard.md").read_text(encoding="utf-8")
    assert cli(["leaderboard", str(tmp_path / "empty")]) == 2
    [line] = capsys.readouterr().err.splitlines()  # one line, no usage block
    assert line.startswith("wsc-tasks: error: ") and "empty: no model folder of a wsc-tasks" in line


def test_leaderboard_names_each_models_metadata_and_links_its_files(sweep_out):
    md, _, page = leaderboard.write(list(MODELS), sweep_out, "wsc266", 200, 0)
    text = md.read_text(encoding="utf-8")
    [row] = [line for line in text.splitlines() if line.startswith("| smollm2-135m | model |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:6] == ["smollm2-135m", "model", "hf", "134.5M", "float32 (Q4_1 GGUF)", "main"]
    [results] = (sweep_out / "smollm2-135m" / "lm_eval").glob("results_*.json")
    day = results.name.removeprefix("results_")[:10]  # lm-eval names it by the run's start
    assert cells[7] == day and cells[8].startswith("lm-eval 0.4.13")
    assert f"[results](smollm2-135m/lm_eval/results_{day}T" in cells[-1]
    assert "[samples](smollm2-135m/lm_eval/)" in cells[-1]
    html_page = page.read_text(encoding="utf-8")
    assert f'<a href="smollm2-135m/lm_eval/results_{day}T' in html_page
    chance = "| chance | chance model"
    [chance_row] = [line for line in text.splitlines() if line.startswith(chance)]
    assert "| wsc-chance | – | – |" in chance_row  # no weights: no parameters, no precision


def _browser():
    from conftest import needs

    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        needs("BROWSER", "needs Chromium: apt-get install -y chromium chromium-driver")
    if importlib.util.find_spec("selenium") is None:
        needs("BROWSER", "needs selenium: pip install '.[test]'")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="wsc-chromium-")
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--window-size=1300,1000",
    ):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    return driver, profile


def _column(driver, table: str, index: int) -> list[str]:
    from selenium.webdriver.common.by import By

    rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
    return [r.find_elements(By.TAG_NAME, "td")[index].text for r in rows if r.is_displayed()]


def _page_width(driver) -> tuple[int, int, int]:
    """(the page's scroll width, its visible width, the window's width): the first two are
    equal when nothing makes the page scroll sideways."""
    page = "document.documentElement"
    found = [f"{page}.scrollWidth", f"{page}.clientWidth", "window.innerWidth"]
    return tuple(driver.execute_script(f"return {js}") for js in found)


def _sorts(driver, table: str, column: int, rows: int) -> None:
    """A click on the column's header sorts the table's ``rows`` rows up by it, a second down."""
    from selenium.webdriver.common.by import By

    head = driver.find_elements(By.CSS_SELECTOR, f"#{table} thead th")[column]
    head.click()
    values = [float(v.split()[0]) for v in _column(driver, table, column)]
    assert values == sorted(values) and len(values) == rows
    head.click()
    values = [float(v.split()[0]) for v in _column(driver, table, column)]
    assert values == sorted(values, reverse=True)


def _at_400_px(driver, page: Path, shot: Path) -> None:
    """At 400 px the page never scrolls sideways: wide tables scroll in their own box."""
    from selenium.webdriver.common.by import By

    driver.set_window_size(400, 900)
    driver.get(page.as_uri())
    width, visible, window = _page_width(driver)
    assert width <= visible and window == 400
    boxes = driver.find_elements(By.CSS_SELECTOR, "div.scroll")
    assert boxes and all(b.size["width"] <= 400 for b in boxes)
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


FIGURES_JS = """
const figures = Array.from(document.querySelectorAll('svg.figure'))
  .filter(svg => svg.getBoundingClientRect().width > 0);  // the layout this width shows
let smallest = Infinity, texts = 0;
for (const svg of figures) {
  for (const text of svg.querySelectorAll('text')) {
    if (!text.textContent.trim()) continue;
    texts += 1;
    const size = parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a;
    smallest = Math.min(smallest, size);
  }
}
const first = figures.length ? figures[0].getBoundingClientRect().top + window.scrollY : null;
return [document.documentElement.scrollHeight, first, smallest, texts, figures.length];
"""


def _figures(driver) -> dict[str, float]:
    """The page's height, the y of its first figure and the smallest text of any figure, in CSS
    pixels as drawn (a figure's text is SVG text: its size is its font size times its scale)."""
    height, first, smallest, texts, count = driver.execute_script(FIGURES_JS)
    assert count > 0 and texts > 10 * count  # the figures' labels are text, not paths
    return {"height": height, "first_figure_y": first, "smallest_figure_text_px": smallest}


FIRST_SCREEN_JS = """
const top = (el) => el ? el.getBoundingClientRect().top + window.scrollY : null;
const method = Array.from(document.querySelectorAll('p'))
  .find(p => p.textContent.startsWith('Made by'));
const boxes = Array.from(document.querySelectorAll('div.scroll.figure'))
  .filter(box => box.getBoundingClientRect().width > 0)
  .map(box => [box.closest('figure').id, box.scrollWidth, box.clientWidth]);
return [Array.from(document.querySelectorAll('li.conclusion')).map(top),
        top(document.querySelector('nav.toc')), top(method), boxes];
"""
FIRST_CONCLUSION = {1400: 900, 400: 850}  # px: the first conclusion's top, at most, per width


def test_report_html_first_screen_answers_at_1400_and_400_px(built):
    """The page opens with each model's conclusion, then the method paragraph and the contents:
    the first conclusion's top under 900 px at 1,400 px wide and under 850 at 400 (before: 1,200
    and 1,653 px in the committed report, below the method paragraph and a contents of 13
    items); every figure's text 12 px or more at both widths (before: 9.5 px at 400 px, the
    figures scrolling sideways in their boxes, the findings' "a" panel off screen): on a phone
    each figure's narrow layout, its panels stacked, in place of the wide one."""
    from selenium.webdriver.common.by import By

    driver, profile = _browser()
    shots = Path(os.environ.get("WSC_TASKS_SCREENSHOT_DIR", built))
    shots.mkdir(parents=True, exist_ok=True)
    measured = {}
    try:
        for width in (1400, 400):
            driver.set_window_size(width, 900)
            driver.get((built / "report.html").as_uri())
            assert driver.execute_script("return window.innerWidth") == width
            conclusions, toc, method, boxes = driver.execute_script(FIRST_SCREEN_JS)
            found = _figures(driver)
            measured[width] = {"conclusions_y": conclusions, "contents_y": toc, **found}
            assert len(conclusions) == len(MODELS), measured
            assert conclusions[0] < FIRST_CONCLUSION[width], measured
            assert max(conclusions) < min(toc, method), measured  # before method and contents
            assert found["smallest_figure_text_px"] >= 12, (width, found)
            assert boxes and all(scroll <= client for _, scroll, client in boxes), boxes
            first = driver.find_element(By.CSS_SELECTOR, "figure")
            assert first.get_attribute("id") == "f-findings"  # the headline figure leads
            page_width, visible, _ = _page_width(driver)
            assert page_width <= visible  # nothing makes the page scroll sideways
            shot = shots / f"report_first_screen_{width}.png"
            assert driver.save_screenshot(str(shot))
        assert max(measured[1400]["conclusions_y"]) < 900  # every model's, at 1,400 px
        (shots / "report_html_measures.json").write_text(json.dumps(measured, indent=1))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_contents_list_only_sections_with_something_to_show(built):
    """A section skipped for want of its tasks is counted under the contents, not listed (a
    report of three WSC266 tasks listed 13 sections, most of them "Skipped")."""
    page = (built / "report.html").read_text(encoding="utf-8")
    markdown = (built / "report.md").read_text(encoding="utf-8")
    toc = page[page.index('<nav class="toc">') : page.index("</nav>")]
    titles = re.findall(r"^## (.+)$", markdown, flags=re.M)
    skipped = [t for t, body in zip(titles, markdown.split("\n## ")[1:], strict=True)
               if body.split("\n", 2)[2].startswith("Skipped:")]  # fmt: skip
    listed = re.findall(r'<li><a href="#s\d+">([^<]+)</a>', toc)
    assert skipped and len(listed) == len(titles) - len(skipped) + 1  # and the examples
    assert not {html.unescape(t) for t in listed} & {t.split(" (thesis")[0] for t in skipped}
    assert f"Not listed: {len(skipped)} sections with nothing to show" in toc
    assert page.index('class="conclusion"') < page.index("Made by") < page.index("<nav")


def test_the_control_table_leads_with_the_controls_some_model_is_above_chance_on():
    """The committed leaderboard: its controls above chance in the first columns, the others
    folded (before: a table 2,385 px wide at 1,400 px, the interesting ones in its 10th-11th
    columns)."""
    from wsc_tasks.leaderboard import writing as render
    from wsc_tasks.report.tables import Table

    table = Table("controls", "Controls", ["model", "a x", "a y", "a z"], [["m", 1, 2, 3]])
    shown = render.controls_html(table, 1)
    assert shown.index('id="table-controls"') < shown.index("<details")
    lead = shown[: shown.index("<details")]
    assert ">a x<" in lead and ">a y<" not in lead
    assert "2 control baselines no model is above chance on" in shown
    assert 'id="table-controls_rest"' in shown and ">a z<" in shown[shown.index("<details") :]
    assert "<details" not in render.controls_html(table, 3)
    assert "No model is above chance on any control baseline" in render.controls_html(table, 0)
    page = (RESULTS / "leaderboard.html").read_text(encoding="utf-8")
    first = page[page.index('id="table-leaderboard_controls"') :]
    heads = re.findall(r"<th>(?:<abbr[^>]*>)?([^<]+)<", first[: first.index("</thead>")])
    assert heads[1:] == [
        "a wsc273_partsent", "p (a wsc273_partsent)",
        "a wsc266_associative_nocands", "p (a wsc266_associative_nocands)",
    ]  # fmt: skip


def test_long_tables_fold_below_their_caption(tmp_path):
    from wsc_tasks.report import html_page as html_report
    from wsc_tasks.report.tables import Table

    short = Table("short", "Short", ["model"], [[f"m{i}"] for i in range(html_report.FOLD)])
    long = Table("long", "Long", ["model"], [[f"m{i}"] for i in range(html_report.FOLD + 1)])
    assert "<details" not in html_report.table_html(short)
    folded = html_report.table_html(long)
    assert folded.startswith('<details class="table"><summary class="caption">Long ')
    assert f"({html_report.FOLD + 1} rows: click to show)" in folded


def test_report_html_in_chromium(built):
    from selenium.webdriver.common.by import By

    driver, profile = _browser()
    shots = Path(os.environ.get("WSC_TASKS_SCREENSHOT_DIR", built))
    shots.mkdir(parents=True, exist_ok=True)
    try:
        driver.set_window_size(1400, 1000)
        driver.get((built / "report.html").as_uri())
        assert driver.title == "Winograd-schema evaluation report"
        sections = driver.find_elements(By.TAG_NAME, "h2")
        assert sections[0].text == "Findings: what the numbers say, per model"
        findings = driver.find_element(By.CSS_SELECTOR, "h2 + ul, h2 + p")
        assert findings.location["y"] > sections[0].location["y"]
        note = driver.find_element(By.CSS_SELECTOR, ".notes")
        assert note.is_displayed() and "chance was run with --limit 133" in note.text
        first_table = driver.find_element(By.TAG_NAME, "table")
        assert note.location["y"] < first_table.location["y"]  # read before any table
        width, visible, window = _page_width(driver)
        assert width <= visible and window == 1400  # no horizontal scroll of the page
        shot = shots / "report_html_1400.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        heads = driver.find_elements(By.CSS_SELECTOR, "#table-overview thead th")
        names = [h.text for h in heads]
        column = names.index("a")
        tip = heads[column].find_element(By.TAG_NAME, "abbr").get_attribute("title")
        assert tip == "share of problems answered correctly"
        _sorts(driver, "table-overview", column, 4)  # 2 models × 2 accuracy tasks
        box = driver.find_element(By.CSS_SELECTOR, 'input[data-table="table-overview"]')
        box.send_keys("chance")
        assert set(_column(driver, "table-overview", names.index("model"))) == {"chance"}
        figures = driver.find_elements(By.CSS_SELECTOR, ".wide svg.figure")
        assert figures and all(f.size["width"] > 300 for f in figures)
        narrow = driver.find_elements(By.CSS_SELECTOR, ".narrow svg.figure")
        assert len(narrow) == len(figures) and not any(f.is_displayed() for f in narrow)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        _at_400_px(driver, built / "report.html", shots / "report_html_400.png")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_leaderboard_html_in_chromium(sweep_out):
    """The headline table fits 1,400 px without scrolling, the notes come before it, a column can
    be hidden and shown again, tables sort; at 400 px only tables scroll, in their own box."""
    from selenium.webdriver.common.by import By

    leaderboard.write(list(MODELS), sweep_out, "wsc266", 200, 0)
    driver, profile = _browser()
    shots = Path(os.environ.get("WSC_TASKS_SCREENSHOT_DIR", sweep_out))
    shots.mkdir(parents=True, exist_ok=True)
    try:
        driver.set_window_size(1400, 1000)
        driver.get((sweep_out / "leaderboard.html").as_uri())
        assert driver.find_elements(By.TAG_NAME, "h2")[0].text == "Findings"
        note = driver.find_element(By.CSS_SELECTOR, ".notes")
        assert note.is_displayed() and LIMIT_NOTE in note.text
        headline = driver.find_element(By.ID, "table-leaderboard")
        assert note.location["y"] < headline.location["y"]
        width, visible, window = _page_width(driver)
        assert width <= visible and window == 1400
        box = headline.find_element(By.XPATH, "..")
        scroll, client = driver.execute_script(
            "return [arguments[0].scrollWidth, arguments[0].clientWidth]", box
        )
        assert scroll <= client  # the headline table fits: no horizontal scroll at 1,400 px
        shot = shots / "leaderboard_html_1400.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
        heads = headline.find_elements(By.CSS_SELECTOR, "thead th")
        column = [h.text for h in heads].index("p (A)")
        menu = driver.find_element(By.CSS_SELECTOR, "details.columns")
        menu.find_element(By.TAG_NAME, "summary").click()
        box = menu.find_element(
            By.CSS_SELECTOR, f'input[data-table="table-leaderboard"][data-column="{column}"]'
        )
        box.click()
        assert not heads[column].is_displayed() and _column(driver, "table-leaderboard", 0)
        assert not headline.find_elements(By.CSS_SELECTOR, "tbody td")[column].is_displayed()
        box.click()
        assert heads[column].is_displayed()
        table = "table-leaderboard_consistency"
        heads = driver.find_elements(By.CSS_SELECTOR, f"#{table} thead th")
        column = [h.text for h in heads].index("C wsc266_switched")
        _sorts(driver, table, column, 2)
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
        _at_400_px(driver, sweep_out / "leaderboard.html", shots / "leaderboard_html_400.png")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_a_rank_set_sorts_by_its_lower_end_up_and_its_upper_end_down(tmp_path):
    """``[low, high]``: one click orders by the lower end (the models that may rank first), the
    next by the upper end, highest first (those that may rank last)."""
    from selenium.webdriver.common.by import By

    from wsc_tasks.report import html_page as html_report
    from wsc_tasks.report.tables import RankSet, Table

    table = Table("sets", "sets", ["model", "rank, 95% simultaneous"])
    table.rows = [["a", RankSet(1, 9)], ["b", RankSet(2, 3)], ["c", RankSet(3, 12)],
                  ["d", RankSet(1, 2)]]  # fmt: skip
    page = tmp_path / "sets.html"
    page.write_text(html_report.page("sets", html_report.table_html(table)), encoding="utf-8")
    driver, profile = _browser()
    try:
        driver.get(page.as_uri())
        head = driver.find_elements(By.CSS_SELECTOR, "#table-sets th")[1]
        head.click()
        assert _column(driver, "table-sets", 0) == ["a", "d", "b", "c"]
        head.click()
        assert _column(driver, "table-sets", 0) == ["c", "a", "b", "d"]
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
