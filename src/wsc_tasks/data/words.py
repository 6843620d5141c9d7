"""English words as the control baselines read them: closed word classes and candidate phrases.

Decided with closed word lists only (no tagger, no data download): what a determiner, a function
word or an irregular past form is, a candidate's determiner and head, a word's forms, and which
words of a text name a candidate. ``wsc_tasks.data.transforms`` finds mentions with them and
``wsc_tasks.data.audit`` checks the result with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Closed word classes: what a mention's left edge may hold (a determiner, then modifiers) and
# what can never be a pre-nominal modifier. Everything else is an open-class word.
DETERMINERS = frozenset(
    "the a an this that these those my your his her its our their some any every each no another"
    " one two three four five six seven eight nine ten eleven twelve".split()
)
FUNCTIONWORDS = DETERMINERS | frozenset(
    # prepositions
    "about above across after against along among around at before behind below beneath beside"
    " besides between beyond by despite down during except for from in inside into like near of"
    " off on onto out outside over past since through throughout till to toward towards under"
    " underneath until up upon with within without via per than as"
    # conjunctions and wh-words
    " and or but nor so yet because although though while whereas if unless when whenever where"
    " wherever whether who whom whose which what why how"
    # pronouns
    " i me you he him she it we us they them myself yourself himself herself itself ourselves"
    " themselves both all either neither"
    # auxiliaries and modals
    " be am is are was were been being have has had having do does did can could will would shall"
    " should may might must isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't"
    " can't cannot couldn't won't wouldn't shouldn't mustn't"
    # adverbs and particles that follow or precede a noun phrase
    " not never very too also just even still then now here there away back only really quite"
    " rather almost already soon later again instead first".split()
)
# Common irregular past forms: after a singular noun they are verbs, not the head of a compound.
IRREGULAR_PAST = frozenset(
    "ate became began bent bit bled blew broke brought built bought caught chose came cut dealt"
    " did drew drank drove dug fed fell felt fought found fled flew forgot forgave froze gave got"
    " grew hung heard held hid hit hurt kept knew laid led left lent let lay lit lost made meant"
    " met paid put quit ran rang rode rose said sat saw sold sent set shook shot shut sang sank"
    " slept slid spoke spent spun stood stole stuck struck swam swore swept swung took taught tore"
    " told thought threw understood woke wore won wrote".split()
)
WORD = re.compile(r"[\w\x00]+(?:['’]\w+)*|[^\w\s]")  # words (with 's, n't) and punctuation
GENITIVE = re.compile(r"\w+(?:['’]s|s['’])", re.IGNORECASE)
POSSESSIVE = r"(?:['’]s)?"


def _strip_possessive(phrase: str) -> str:
    return re.sub(r"(?:['’]s|(?<=s)['’])$", "", phrase.strip())


def split_candidate(candidate: str) -> tuple[str, str]:
    """(determiner, head phrase) of a candidate: ``"the oak tree"`` → ``("the", "oak tree")``.

    The determiner is an article, demonstrative, possessive pronoun or numeral, or a genitive
    (``"Amy's parents"``); a candidate without one (a name, Winogrande's ``"cake"``) is bare:
    ``("", candidate)``. A possessive ending (``"the man's"``) is not part of either.
    """
    words = _strip_possessive(candidate).split()
    if len(words) > 1 and (words[0].lower() in DETERMINERS or GENITIVE.fullmatch(words[0])):
        return words[0], " ".join(words[1:])
    return "", " ".join(words)


def word_forms(word: str) -> set[str]:
    """The lower-cased forms that count as the same word: itself, plural and singular."""
    w = word.lower()
    forms = {w, w + "s", w + "es", w + "'s", w + "’s"}
    if w.endswith("y"):
        forms.add(w[:-1] + "ies")
    if w.endswith("ies"):
        forms.add(w[:-3] + "y")
    if w.endswith("es"):
        forms.add(w[:-2])
    if w.endswith("s") and len(w) > 3:
        forms.add(w[:-1])
    return forms


def content_words(candidate: str) -> set[str]:
    """The words that name a candidate: its head phrase less function words (a genitive
    determiner names another entity: ``"Paul's books"`` → {books})."""
    _, head = split_candidate(candidate)
    words = {w.lower() for w in re.findall(r"\w+(?:['’]\w+)*", head)}
    return {w for w in words if w not in FUNCTIONWORDS}


def leaked_words(text: str, candidates: Iterable[str]) -> list[str]:
    """The words of ``text`` that are a form of a content word of one of ``candidates``."""
    forms = set().union(*(word_forms(w) for c in candidates for w in content_words(c)))
    return [w for w in re.findall(r"\w+(?:['’]\w+)*", text) if w.lower() in forms]


def tokens(text: str) -> list[re.Match[str]]:
    """The words (with 's, n't) and punctuation marks of ``text``, in order."""
    return list(WORD.finditer(text))


def is_modifier(word: str) -> bool:
    """An open-class lower-case word: a pre-nominal modifier when it stands between a
    determiner and the head ("the brown suitcase", "a toy flag"); a preposition, pronoun,
    conjunction or verb auxiliary never is."""
    return bool(re.fullmatch(r"[a-z][a-z-]*", word)) and word not in FUNCTIONWORDS


def looks_like_noun(word: str) -> bool:
    """True for an open-class word after a singular noun that cannot be its verb: not a past or
    progressive form, not a present third person, not an adverb ("mouse hole", not "tree fell")."""
    return (
        is_modifier(word)
        and word not in IRREGULAR_PAST
        and not re.search(r"(?:s|ed|ing|ly)$", word)
    )
