"""Text from users and runs inside this package's own Markdown, escaped by each output format.

Model labels, task names, paths, notes and lm-eval arguments come from a models file, a folder's
name or a run's results JSON: nobody here wrote them. The sentences and titles around them are
this package's Markdown (`code` spans, **bold**, [links](relative/path)). A user string enters that
Markdown only through ``name`` (shown as text) or ``code`` (shown as code), which wrap it between
two private-use characters; each output turns a wrapped string into its own escaped form and never
reads it as markup: ``markdown`` (Markdown-escaped, or a code span that holds it whatever it
contains), ``render`` with HTML escaping (``report.html_page.inline``), ``plain`` (the terminal,
CSV).
A CSV cell of text that a spreadsheet would run as a formula is neutralised (``spreadsheet``).
Control characters (a newline, a tab, NUL, ESC) and the characters that reorder text
(right-to-left marks and overrides) are shown as escapes (``\\n``, ``\\u202e``) in every format:
a name can neither split a line or a table row nor disguise the text around it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

NAME, CODE, END = "\ue000", "\ue001", "\ue002"  # a name shown as text / as code, and its end
_HOLD, _HELD = "\ue003", "\ue004"  # a placeholder for a marked string while the rest is rendered
_MARKS = re.compile("[\ue000-\ue004]")
SEGMENT = re.compile("([\ue000\ue001])([^\ue000-\ue004]*)\ue002")
_PLACEHOLDER = re.compile("\ue003(\\d+)\ue004")
# characters that reorder the text around them (Unicode's bidirectional formatting characters)
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _clean(text: object) -> str:
    """User text without the private-use characters that mark names (none can be forged)."""
    return _MARKS.sub("", str(text))


def name(text: object) -> str:
    """User text to be shown as text, inside this package's Markdown (its hidden characters
    escaped already: a marked string never holds a line break that could cut it in two)."""
    return f"{NAME}{visible(_clean(text))}{END}"


def code(text: object) -> str:
    """User text to be shown as code (a task name), inside this package's Markdown."""
    return f"{CODE}{visible(_clean(text))}{END}"


def hidden(char: str) -> bool:
    """A character a reader would not see as itself: a control, a line or paragraph separator, a
    bidirectional formatting character."""
    return unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in BIDI


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# every ``hidden`` character: the controls (Cc), U+2028 (Zl), U+2029 (Zp) and ``BIDI``
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + "".join(sorted(BIDI)) + "]")
_SPACE = re.compile(r"\s")  # str.isspace()'s characters


def visible(text: object) -> str:
    """``text`` with every ``hidden`` character written as its escape: ``line1\\nline2``."""
    if not _HIDDEN.search(text := str(text)):  # the usual case, without a look at each character
        return text
    out = []
    for char in str(text):
        if not hidden(char):
            out.append(char)
        elif char in _NAMED:
            out.append(_NAMED[char])
        else:
            point = ord(char)
            out.append(f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}")
    return "".join(out)


def has_hidden(text: str) -> str | None:
    """The first ``hidden`` character of ``text``, as its escape; None if it has none."""
    found = next((c for c in text if hidden(c)), None)
    return None if found is None else visible(found)


def render(
    text: str,
    outside: Callable[[str], str],
    as_name: Callable[[str], str],
    as_code: Callable[[str], str] | None = None,
) -> str:
    """``text`` in an output format: ``outside`` renders this package's Markdown (seeing each
    marked string as an opaque placeholder: its characters never reach ``outside``), ``as_name``
    and ``as_code`` each marked string (already ``visible``)."""
    if _MARKS.search(text) is None:  # most cells: nothing marked
        return outside(text)
    held: list[str] = []

    def hold(match: re.Match[str]) -> str:
        shown = visible(match[2])
        held.append(as_name(shown) if match[1] == NAME or as_code is None else as_code(shown))
        return f"{_HOLD}{len(held) - 1}{_HELD}"

    body = SEGMENT.sub(hold, re.sub("[\ue003\ue004]", "", text))
    body = re.sub("[\ue000-\ue002]", "", body)  # a stray mark (a cut string): dropped
    return _PLACEHOLDER.sub(lambda m: held[int(m[1])], outside(body))


# -- Markdown --------------------------------------------------------------------------------------
_MARKDOWN = {"\\": "\\\\", "`": "\\`", "*": "\\*", "[": "\\[", "]": "\\]", "~": "\\~"}
_ENTITIES = {"<": "&lt;", "&": "&amp;"}  # ">" alone opens no tag: left as it is, readable


def escape_markdown(text: object) -> str:
    """Plain text that every Markdown renderer shows as itself: ``<`` and ``&`` as entities (a
    renderer that passes raw HTML through cannot see a tag; Python-Markdown, unlike CommonMark,
    does not honour ``\\<``), the characters of emphasis, code and links backslash-escaped
    (``_`` only where it could start or end emphasis: ``wsc266_switched`` stays as it is).
    ``|`` is left to the table that holds the text (``tables.markdown_grid``)."""
    text = visible(_clean(text))
    out = []
    for i, char in enumerate(text):
        if char in _MARKDOWN:
            out.append(_MARKDOWN[char])
        elif char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char == "_":
            inner = 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append("_" if inner else "\\_")
        else:
            out.append(char)
    return "".join(out)


def code_span(text: object) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds (a longer fence around it):
    inside one, every renderer shows ``<``, ``*`` and ``[`` as themselves."""
    text = visible(_clean(text))
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown(text: str) -> str:
    """This package's Markdown with each marked string escaped (``name``) or in a code span
    (``code``)."""
    return render(text, lambda body: body, escape_markdown, code_span)


def plain(text: str, outside: Callable[[str], str] = lambda body: body) -> str:
    """The text of the terminal and CSV: each marked string as it is, hidden characters
    escaped; ``outside`` may change this package's own text (drop its backticks)."""
    return render(text, outside, lambda shown: shown)


# -- links -----------------------------------------------------------------------------------------
def safe_href(href: str) -> bool:
    """A link this package may write: a relative path inside the output folder (no scheme, no
    leading ``/``, no ``..``, no backslash) or an ``https:`` address."""
    if _HIDDEN.search(href) or _SPACE.search(href) or "\\" in href:
        return False
    if href.lower().startswith("https://"):
        return len(href) > len("https://")
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", href)
    if scheme or href.startswith("/") or not href:
        return False
    return ".." not in href.split("#")[0].split("?")[0].split("/")


def check_href(href: str) -> str:
    """``href`` if ``safe_href``; else a ValueError saying why it is refused."""
    if not safe_href(href):
        raise ValueError(
            f"link {visible(href)!r} refused: only relative paths inside the output folder or "
            "https: addresses are linked"
        )
    return href


# what a spreadsheet reads as the start of a formula (OWASP's list for CSV injection)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet(text: str) -> str:
    """A CSV cell of text as a spreadsheet should show it: one that starts as a formula would
    (``=HYPERLINK(…)``, ``@SUM(…)``, ``-1+1``) gets a leading single quote, which spreadsheets
    take as "text" (OWASP's advice; the writer quotes every text cell, ``tables.write_csv``).
    Only text: a number is written as a number, negative ones included."""
    return f"'{text}" if text.startswith(FORMULA_START) else text
