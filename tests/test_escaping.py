"""Names are text: model labels, task names, notes and lm-eval arguments from a models file or a
run's folder never become markup or script in a report or a leaderboard, in any format.

A sweep folder is made of copies of the committed runs (three WSC266 tasks, as in
``test_html_report``) under hostile folder names, and its leaderboard written; a report is written
of two runs with hostile labels and a hostile lm-eval model name. The HTML is read back by a real
HTML parser (``html.parser``), the Markdown rendered by a CommonMark renderer that passes raw HTML
through (``markdown-it-py``, the worst case), the CSV by ``csv``; a browser opens the pages.
"""

from __future__ import annotations

import csv
import html
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from wsc_tasks import leaderboard, markup
from wsc_tasks.claims import findings
from wsc_tasks.leaderboard import tiers
from wsc_tasks.paths import SWEEP_DONE
from wsc_tasks.report import build as report
from wsc_tasks.report import html_page as html_report
from wsc_tasks.report.tables import Links, Table, latex, markdown, write
from wsc_tasks.runs.folders import load_run
from wsc_tasks.sweep.models import ModelsFileError, read_models

RESULTS = Path(__file__).resolve().parents[1] / "results"
TASKS = ("wsc266", "wsc266_switched", "wsc266_switched_consistency")
SCRIPT_LINK = "[click](javascript:alert`document.domain`)"
# every one a valid folder name (no "/", no NUL): a sweep's model folders
HOSTILE = (
    SCRIPT_LINK,
    "**bold** _x_",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)<\\script>",
    "line1\nline2",
    "tab\there",
    "\"double\" 'single' `tick`",
    "back\\slash\\n & &amp;",
    "\u202eevil\u200f-rtl",
    "| pipe | cell",
    '=HYPERLINK("x","y")',  # formulas, as a spreadsheet opening the CSV would run them
    "@SUM(1+1)",
    "-1+1",
)
FORMULA = '=HYPERLINK("http://x","y")'  # not a folder name (it holds "/"): a table cell
REPORT_LABELS = ("<script>alert(1)</script>", SCRIPT_LINK)  # a label of LABEL=DIR may hold "/"
MODEL_NAME = "<img src=x onerror=alert(2)> **hf**"  # lm-eval's model name in a results file


def _copy_run(source: Path, target: Path, model: str | None = None) -> None:
    """The run's results restricted to TASKS, with those tasks' samples files."""
    for path in source.rglob("results_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["results"] = {t: data["results"][t] for t in TASKS}
        data["groups"] = {}
        if model is not None:
            data["config"]["model"] = model
        target.mkdir(parents=True, exist_ok=True)
        (target / path.name).write_text(json.dumps(data), encoding="utf-8")
        stamp = path.name[len("results_") : -len(".json")]
        for task in TASKS:
            name = f"samples_{task}_{stamp}.jsonl.gz"
            shutil.copy(path.parent / name, target / name)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A sweep folder of the hostile names (SmolLM2 and chance copies, alternately), with its
    leaderboard written."""
    out = tmp_path_factory.mktemp("hostile")
    for i, name in enumerate(HOSTILE):
        source = RESULTS / ("smollm2-135m" if i % 2 == 0 else "chance") / "lm_eval"
        _copy_run(source, out / name / "lm_eval")
        (out / name / SWEEP_DONE).write_text("{}\n")
    leaderboard.write(leaderboard.model_folders(out), out, "wsc266", 100, 0)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A report of two runs with hostile labels, one with a hostile lm-eval model name."""
    folder = tmp_path_factory.mktemp("runs")
    _copy_run(RESULTS / "smollm2-135m" / "lm_eval", folder / "a", model=MODEL_NAME)
    _copy_run(RESULTS / "chance" / "lm_eval", folder / "b")
    runs = [load_run(folder / "a", REPORT_LABELS[0]), load_run(folder / "b", REPORT_LABELS[1])]
    out = tmp_path_factory.mktemp("report")
    report.write(runs, out, 50, 0, quiet=True)
    return out


# -- reading the outputs back --------------------------------------------------------------------
class Parsed(HTMLParser):
    """Every element, attribute and text chunk of a page, as a browser's parser sees them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.texts).append(data)


# what the pages' own code writes (html_report, rendering, leaderboard) and matplotlib's SVG
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "script", "h1", "h2", "h3", "h4", "p",
    "ul", "ol", "li", "b", "em", "code", "a", "nav", "span", "div", "table", "thead", "tbody", "tr",
    "th", "td", "abbr", "input", "details", "summary", "label", "figure", "figcaption",
}  # fmt: skip
SVG_TAGS = {
    "svg", "metadata", "rdf:rdf", "cc:work", "dc:type", "dc:date", "dc:format", "dc:creator",
    "cc:agent", "dc:title", "defs", "style", "g", "path", "use", "text", "tspan", "clippath",
    "rect", "line", "polyline", "circle",
}  # fmt: skip


def _check_page(page: str, names: tuple[str, ...]) -> Parsed:
    """No element or attribute came from a name: the tags are the page's own, no ``on…``
    attribute, every link relative or https:, one script (the page's, allowed by the
    Content-Security-Policy's hash); each name is shown whole, as text (its hidden characters
    escaped), in one text chunk."""
    parsed = Parsed(page)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= PAGE_TAGS | SVG_TAGS, tags - PAGE_TAGS - SVG_TAGS
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        href = attrs.get("href") or ""
        assert not href or href.startswith("#") or markup.safe_href(href), href
        assert not attrs.get("src")  # nothing fetched, no image
    assert parsed.scripts == [html_report.SCRIPT]
    [policy] = [a["content"] for t, a in parsed.tags if a.get("http-equiv")]
    assert policy == html_report.policy() and "script-src 'sha256-" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
    for name in names:
        shown = markup.visible(name)
        assert any(shown in text for text in parsed.texts), shown
    return parsed


def _markdown_html(text: str) -> str:
    """The Markdown as a CommonMark renderer with tables and raw HTML allowed shows it."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def _check_markdown(text: str, names: tuple[str, ...], own: frozenset[str] = frozenset()) -> None:
    """Rendered, the Markdown has no element from a name (no image, script, emphasis, link
    but the leaderboard's own), shows each name as written; each table row has as many cells as
    its header (a name's newline or ``|`` does not cut a row)."""
    rendered = _markdown_html(text)
    parsed = Parsed(rendered)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= {"h1", "h2", "h3", "p", "ul", "li", "strong", "code", "a", "table", "thead",
                    "tbody", "tr", "th", "td", "img"} | own, tags  # fmt: skip
    assert not parsed.scripts
    for tag, attrs in parsed.tags:
        for link in (attrs.get("href"), attrs.get("src")):
            assert link is None or markup.safe_href(html.unescape(link)), link
        if tag == "img":  # report.md's figures/<stem>.png, the leaderboard's ranks figure
            source = attrs.get("src") or ""
            own_figure = source.startswith("figures/") or source == f"{tiers.STEM}.svg"
            assert own_figure and len(attrs) == 2, attrs
    joined = "".join(parsed.texts)
    for name in names:
        assert markup.visible(name) in joined, name
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.startswith("|")]
        counts = {line.replace("\\|", "").count("|") for line in lines}
        assert len(counts) <= 1, block
        assert all(line.startswith("|") for line in block.splitlines()) or not lines, block


# -- the leaderboard -----------------------------------------------------------------------------
def test_leaderboard_html_has_no_markup_from_a_name(sweep):
    page = (sweep / "leaderboard.html").read_text(encoding="utf-8")
    parsed = _check_page(page, HOSTILE)
    assert "<img" not in page and "<script>alert" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text
    bold = [t for t in parsed.texts if t.strip() in ("bold", "x", "click", "document.domain")]
    assert bold == []  # no name was read as Markdown: no <b>bold</b>, no link named click
    assert "line1\\nline2" in page and "\u202e" not in page and "\t" not in page


def test_leaderboard_markdown_has_no_markup_from_a_name(sweep):
    text = (sweep / "leaderboard.md").read_text(encoding="utf-8")
    _check_markdown(text, HOSTILE, frozenset({"em"}))  # the decision rule's own emphasis
    assert "<img" not in text and "<script>" not in text and "\u202e" not in text
    assert "- **&lt;img src=x onerror=alert(1)>**: " in text
    assert "- **\\*\\*bold\\*\\* \\_x\\_**: " in text
    assert "- **line1\\\\nline2**: " in text  # one bullet, the newline shown as \n
    assert "\\[click\\](javascript:alert\\`document.domain\\`)" in text


def test_leaderboard_csv_keeps_each_name_as_it_is(sweep):
    with (sweep / "leaderboard.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    # quoted, not altered, but a formula's leading quote
    assert sorted(row["model"] for row in rows) == sorted(map(markup.spreadsheet, HOSTILE))
    assert {'\'=HYPERLINK("x","y")', "'@SUM(1+1)", "'-1+1"} <= {row["model"] for row in rows}
    assert all(row["finding"].startswith(("A = ", "chance model")) for row in rows)
    _check_csv(sweep / "leaderboard.csv")


def _check_csv(path: Path) -> None:
    """No cell a spreadsheet would run as a formula: each one that starts as a formula would is
    a number (a negative one, written unquoted) or neutralised text (a leading ``'``, quoted)."""
    text = path.read_text(encoding="utf-8")
    with path.open(encoding="utf-8", newline="") as handle:
        quoted = list(csv.reader(handle, quoting=csv.QUOTE_NONNUMERIC))  # unquoted: a float
    cells = [cell for row in quoted for cell in row]
    assert cells and all(
        isinstance(cell, float) or not cell.startswith(markup.FORMULA_START) for cell in cells
    ), path
    assert text.splitlines()[0].startswith('"')  # the header's names are text, quoted


def test_every_csv_a_report_and_a_leaderboard_write_neutralises_formulas(sweep, built):
    for path in [sweep / "leaderboard.csv", *sorted((built / "tables").glob("*.csv"))]:
        _check_csv(path)


def test_a_csv_of_hostile_cells_keeps_numbers_and_neutralises_formulas(tmp_path):
    table = Table("t", "hostile", ["model", "A", "note", FORMULA])
    starts = [FORMULA, "+1", "-1", "@A1", "\tx", "\rx", "ok", "–", "'quoted"]
    table.rows = [[name, 0.5 - 0.25 * i, name, i - 3] for i, name in enumerate(starts)]
    path = write(table, tmp_path)["csv"]
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["model", "A", "note", f"'{FORMULA}"]
    assert [row[0] for row in rows[1:]] == [
        f"'{FORMULA}",
        "'+1",
        "'-1",
        "'@A1",
        "'\tx",
        "'\rx",
        "ok",
        "–",
        "'quoted",
    ]
    assert [float(row[1]) for row in rows[1:]] == [0.5 - 0.25 * i for i in range(len(starts))]
    assert [int(row[3]) for row in rows[1:]] == [i - 3 for i in range(len(starts))]
    lines = path.read_text(encoding="utf-8").split("\n")
    assert (
        lines[1] == '"\'=HYPERLINK(""http://x"",""y"")",0.5,"\'=HYPERLINK(""http://x"",""y"")",-3'
    )
    assert lines[4] == '"\'@A1",-0.25,"\'@A1",0'  # numbers unquoted, negative ones as numbers
    _check_csv(path)


def test_leaderboard_printed_lines_are_one_line_per_model(sweep):
    board = leaderboard.build(leaderboard.model_folders(sweep), sweep, "wsc266", 50, 0)
    printed = leaderboard.printed(board)
    assert all("\n" not in line and "\u202e" not in line for line in printed)
    assert any(line.startswith("- line1\\nline2: A = ") for line in printed)


def test_findings_sentences_escape_names_in_each_format():
    """The overview line names models; its Markdown and HTML show them as text (in groups the
    line names whole: a longer list names its first ``across_models.NAMED``)."""
    from wsc_tasks.claims.across_models import NAMED
    from wsc_tasks.metrics.stats import Estimate

    estimate = Estimate(0.3, 0.2, 0.4, 0.05, 0.2, 0.25, 133, 100, p_above=0.1, p_below=0.9)
    for start in range(0, len(HOSTILE), NAMED):
        names = HOSTILE[start : start + NAMED]
        models = [
            findings.Model(name, ranking=findings.Accuracy("wsc266", None, estimate))
            for name in names
        ]
        line = findings.overview(models)
        _check_markdown(markup.markdown(line), names)
        html_line = html_report.inline(line)
        assert "<a " not in html_line and "<img" not in html_line and "<b>" not in html_line
        for name in names:
            assert html.escape(markup.visible(name)) in html_line


# -- the report ----------------------------------------------------------------------------------
def test_report_html_has_no_markup_from_a_label_or_model_name(built):
    page = (built / "report.html").read_text(encoding="utf-8")
    parsed = _check_page(page, (*REPORT_LABELS, MODEL_NAME))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert not [t for t in parsed.texts if t.strip() in ("click", "document.domain", "hf")]


def test_report_markdown_and_tables_have_no_markup_from_a_label(built):
    text = (built / "report.md").read_text(encoding="utf-8")
    _check_markdown(text, (*REPORT_LABELS, MODEL_NAME), frozenset({"em"}))  # the decision rule's
    assert "<em>hf</em>" not in _markdown_html(text)  # in a code span: `<img …> **hf**`
    assert "<script>" not in text and "`<img src=x onerror=alert(2)> **hf**`" in text
    tex = (built / "tables" / "findings.tex").read_text(encoding="utf-8")
    assert "<script>alert(1)</script> & model" in tex  # & separates cells; < is not special
    with (built / "tables" / "findings.csv").open(encoding="utf-8", newline="") as handle:
        assert {row["model"] for row in csv.DictReader(handle)} == set(REPORT_LABELS)


# -- one table, every format ----------------------------------------------------------------------
def test_a_table_of_hostile_cells_in_markdown_html_and_latex():
    table = Table("t", f"Models on {markup.name('<b>x</b>')}", ["model", "<i>h</i>"])
    table.rows = [[name, name] for name in HOSTILE]
    text = markdown(table)
    _check_markdown(text, HOSTILE)
    assert text.startswith("**Models on &lt;b>x&lt;/b>**")
    parsed = Parsed(html_report.table_html(table))
    assert {tag for tag, _ in parsed.tags} <= PAGE_TAGS
    assert "<i>h</i>" in "".join(parsed.texts)
    tex = latex(table)
    assert "line1\\textbackslash{}nline2" in tex and "\n\n" not in tex.strip()
    assert "back\\textbackslash{}slash" in tex and "\\&amp;" in tex


def test_markup_escapes_and_code_spans():
    assert markup.escape_markdown("wsc266_switched_consistency") == "wsc266_switched_consistency"
    assert markup.escape_markdown("_x_ *y* `z` [a](b) <i> & ~~s~~") == (
        "\\_x\\_ \\*y\\* \\`z\\` \\[a\\](b) &lt;i> &amp; \\~\\~s\\~\\~"
    )
    assert markup.code_span("a`b") == "``a`b``" and markup.code_span("`a") == "`` `a ``"
    assert markup.visible("a\nb\tc\x00d\x1b[31m\u202ee") == "a\\nb\\tc\\x00d\\x1b[31m\\u202ee"
    forged = markup.name(f"{markup.END}**x**{markup.NAME}")  # a name cannot close its mark
    assert markup.markdown(f"say {forged}") == "say \\*\\*x\\*\\*"
    assert html_report.inline(f"`{markup.name('<b>')}` and **{markup.code('a*b')}**") == (
        "<code>&lt;b&gt;</code> and <b><code>a*b</code></b>"
    )


def test_links_go_only_to_relative_paths_inside_the_folder_or_https():
    for href in ("m/lm_eval/results.json", "m/lm_eval/", "report/report.html", "https://hf.co/x"):
        assert markup.safe_href(href), href
        Links((("results", href),))
    for href in ("javascript:alert(1)", "JavaScript:x", "data:text/html,x", "http://x.org",
                 "/etc/passwd", "../secret", "a/../../b", "//evil.org/x", "a\\b", "file:///x",
                 "vbscript:x", " javascript:x"):  # fmt: skip
        assert not markup.safe_href(href), href
        with pytest.raises(ValueError, match="refused: only relative paths"):
            Links((("results", href),))
    shown = html_report.inline("[x](javascript:alert(1)) and [y](m/r.json)")
    assert shown == '[x](javascript:alert(1)) and <a href="m/r.json">y</a>'


@pytest.mark.parametrize(
    ("name", "shown"),
    [('"line1\\nline2"', "line1\\nline2"), ('"a\\tb"', "a\\tb"), ('"a\\0b"', "a\\x00b"),
     ('"x\\u202Ey"', "x\\u202ey")],
)  # fmt: skip
def test_models_file_refuses_a_name_with_a_control_character(tmp_path, name, shown):
    path = tmp_path / "models.yaml"
    path.write_text(f"- name: ok\n  model_args: default\n- name: {name}\n  model_args: default\n")
    with pytest.raises(ModelsFileError) as error:
        read_models(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}:3: ")
    assert f"model name '{shown}' has a control character" in message


# -- in a browser ---------------------------------------------------------------------------------
def _no_script_ran(driver, page: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    for width in (1400, 400):
        driver.set_window_size(width, 900)
        driver.get(page.as_uri())
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert  # noqa: B018 (an alert() would be open)
        assert driver.execute_script("return document.images.length") == 0
        assert driver.execute_script("return document.querySelectorAll('script').length") == 1
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []  # no script even refused by the Content-Security-Policy


def test_pages_with_hostile_names_run_no_script_in_chromium(sweep, built, tmp_path):
    """The leaderboard and the report with the names above: no alert, no image, the page's own
    script only; and a script put into the page by hand is refused by its policy."""
    from test_html_report import _browser

    driver, profile = _browser()
    try:
        _no_script_ran(driver, sweep / "leaderboard.html")
        _no_script_ran(driver, built / "report.html")
        page = (sweep / "leaderboard.html").read_text(encoding="utf-8")
        tampered = tmp_path / "tampered.html"
        injected = "<script>document.title = 'ran'</script>"
        tampered.write_text(page.replace("</body>", f"{injected}</body>"), encoding="utf-8")
        driver.get(tampered.as_uri())
        assert driver.title == "Leaderboard"
        refused = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert any("Content Security Policy" in m for m in refused), refused
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_packages_own_emphasis_is_html_emphasis_and_a_names_is_not():
    """The decision rule's *not distinguishable from chance* reads as emphasis on every page (it
    showed its asterisks in the HTML), while a name's asterisks stay text."""
    from wsc_tasks.report import html_page as html_report

    shown = html_report.inline(f"*at chance*, 2*3, `a*b*` and {markup.name('*x*')}")
    assert shown.startswith("<em>at chance</em>, 2*3, <code>a*b*</code> and ")
    assert "<em>x</em>" not in shown and "x" in shown
