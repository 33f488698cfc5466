"""A generated licensing scenario: rights holders with distinct topics and styles, a public
baseline, and artifacts that imitate one holder. Nothing is downloaded; everything is drawn from
small hand-written word lists with a seeded generator.

A holder is a (topic, style) pair: the topic fixes most content words, the style fixes sentence
shape, connectives and punctuation. The baseline uses only generic words and a neutral style.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from icml25.core import make_rng
from icml25.royalties.errors import RoyaltyInputError

TOPICS: dict[str, tuple[list[str], list[str], list[str]]] = {  # nouns, verbs, adjectives
    "astronomy": (["comet", "nebula", "orbit", "telescope", "galaxy", "planet", "eclipse",
                   "quasar", "meteor", "observatory"],
                  ["drifts", "orbits", "glimmers", "collapses", "rotates", "eclipses"],
                  ["stellar", "distant", "celestial", "luminous", "cosmic"]),
    "cooking": (["saffron", "risotto", "skillet", "broth", "dough", "garlic", "pastry", "oven",
                 "simmer", "ladle"],
                ["simmers", "bakes", "whisks", "seasons", "braises", "kneads"],
                ["savory", "crisp", "tender", "golden", "smoky"]),
    "sailing": (["hull", "mainsail", "keel", "harbor", "rudder", "anchor", "mast", "tide",
                 "jib", "helm"],
                ["tacks", "moors", "hoists", "drifts", "heels", "sails"],
                ["windward", "briny", "leeward", "salty", "nautical"]),
    "law": (["statute", "plaintiff", "verdict", "tribunal", "clause", "appeal", "covenant",
             "injunction", "testimony", "counsel"],
            ["adjudicates", "stipulates", "overrules", "appeals", "enjoins", "litigates"],
            ["binding", "statutory", "judicial", "liable", "pending"]),
    "gardening": (["tulip", "compost", "trellis", "seedling", "hedge", "orchard", "mulch",
                   "greenhouse", "fern", "blossom"],
                  ["blooms", "prunes", "sprouts", "waters", "grafts", "wilts"],
                  ["leafy", "fragrant", "verdant", "perennial", "mossy"]),
    "music": (["sonata", "violin", "chord", "melody", "orchestra", "tempo", "cadence",
               "overture", "cello", "rhythm"],
              ["resonates", "modulates", "harmonizes", "crescendos", "strums", "tunes"],
              ["melodic", "minor", "staccato", "lyrical", "sonorous"]),
    "chess": (["bishop", "gambit", "rook", "endgame", "pawn", "checkmate", "knight", "opening",
               "castling", "queen"],
              ["sacrifices", "blunders", "captures", "defends", "pins", "forks"],
              ["positional", "tactical", "doubled", "isolated", "passed"]),
    "medicine": (["diagnosis", "symptom", "vaccine", "clinic", "dosage", "surgeon", "fever",
                  "therapy", "pulse", "antibody"],
                 ["treats", "prescribes", "diagnoses", "heals", "monitors", "relieves"],
                 ["chronic", "acute", "clinical", "sterile", "benign"]),
}
GENERIC = (["day", "place", "person", "thing", "world", "house", "way", "time", "hand", "story",
            "idea", "road", "city", "friend", "morning", "letter"],
           ["makes", "takes", "sees", "finds", "gives", "keeps", "holds", "brings"],
           ["good", "new", "small", "old", "long", "great", "quiet", "simple"])
DETERMINERS = ["the", "a", "this", "every", "one", "that"]
PREPOSITIONS = ["in", "near", "under", "beyond", "after", "with"]
# style -> (sentence closer, clause joiner, opening words, lower-case everything?)
STYLES: dict[str, tuple[str, str, list[str], bool]] = {
    "plain": (".", ", and ", [], False),
    "exclaim": ("!", "; ", ["Behold,", "Lo,"], False),
    "query": ("?", " or ", ["Why does", "Must"], False),
    "legalese": (".", "; whereas ", ["Heretofore,", "Notwithstanding this,"], False),
    "whisper": ("...", " -- ", [], True),
    "verse": (" /", ", / ", ["O"], False),
    "shout": ("!!", " AND ", [], False),
    "bullet": (";", " * ", ["Note:", "Item:"], True),
}
DEFAULT_HOLDERS = [("astronomy", "plain"), ("cooking", "exclaim"), ("sailing", "query"),
                   ("law", "legalese"), ("gardening", "whisper"), ("music", "verse"),
                   ("chess", "shout"), ("medicine", "bullet")]


@dataclasses.dataclass(frozen=True)
class HolderStyle:
    """How one synthetic holder writes: a topic, a style and how often it uses topic words.

    Parameters
    ----------
    name : str
        The holder's name.
    topic : str
        One of the built-in topics (``"astronomy"``, ``"cooking"``, ``"sailing"``, ``"law"``,
        ``"gardening"``, ``"music"``, ``"chess"``, ``"medicine"``).
    style : str
        One of the built-in styles (``"plain"``, ``"exclaim"``, ``"query"``, ``"legalese"``,
        ``"whisper"``, ``"verse"``, ``"shout"``, ``"bullet"``).
    topical : float, default=0.8
        Probability that a content word comes from the topic rather than generic words.

    Raises
    ------
    RoyaltyInputError
        For an unknown topic or style.

    Examples
    --------
    >>> HolderStyle("ann", "chess", "shout").topical
    0.8
    """

    name: str
    topic: str
    style: str
    topical: float = 0.8  # probability that a content word comes from the topic

    def __post_init__(self):
        if self.topic not in TOPICS:
            raise RoyaltyInputError(f"unknown topic {self.topic!r}; known: {sorted(TOPICS)}")
        if self.style not in STYLES:
            raise RoyaltyInputError(f"unknown style {self.style!r}; known: {sorted(STYLES)}")




def default_holders(n: int = 8) -> list[HolderStyle]:
    """``n`` holders cycling through topics and styles so no two share both (n <= 64).

    Parameters
    ----------
    n : int, default=8
        Number of holders, 1 to 64.

    Returns
    -------
    list of HolderStyle
        Holders named ``h01-<topic>-<style>``, ``h02-...``.

    Raises
    ------
    RoyaltyInputError
        If ``n`` is outside 1..64.

    Examples
    --------
    >>> [h.name for h in default_holders(2)]
    ['h01-astronomy-plain', 'h02-cooking-exclaim']
    """
    if not 1 <= n <= 64:
        raise RoyaltyInputError(f"the generator offers 1..64 distinct holders, got {n}")
    topics, styles = list(TOPICS), list(STYLES)
    out = []
    for i in range(n):
        topic, style = (DEFAULT_HOLDERS[i] if i < len(DEFAULT_HOLDERS)
                        else (topics[i % 8], styles[(i // 8 + i) % 8]))
        out.append(HolderStyle(f"h{i + 1:02d}-{topic}-{style}", topic, style))
    return out


def _pick(rng: np.random.Generator, words: list[str]) -> str:
    return words[int(rng.integers(len(words)))]


def _clause(rng: np.random.Generator, holder: HolderStyle | None) -> str:
    def word(kind: int) -> str:
        if holder is not None and rng.random() < holder.topical:
            return _pick(rng, TOPICS[holder.topic][kind])
        return _pick(rng, GENERIC[kind])

    parts = [_pick(rng, DETERMINERS), word(2), word(0), word(1), _pick(rng, DETERMINERS),
             word(0)]
    if rng.random() < 0.5:
        parts += [_pick(rng, PREPOSITIONS), _pick(rng, DETERMINERS), word(2), word(0)]
    return " ".join(parts)


def sentence(rng: np.random.Generator, holder: HolderStyle | None) -> str:
    """One sentence in ``holder``'s topic and style (``None``: the neutral baseline)."""
    closer, joiner, openers, lower = STYLES["plain" if holder is None else holder.style]
    text = _clause(rng, holder)
    if rng.random() < 0.4:
        text += joiner + _clause(rng, holder)
    if openers and rng.random() < 0.5:
        text = _pick(rng, openers) + " " + text
    text = text + closer
    return text.lower() if lower else text[0].upper() + text[1:]


def text(rng: np.random.Generator, holder: HolderStyle | None, n_sentences: int) -> str:
    return " ".join(sentence(rng, holder) for _ in range(n_sentences))


@dataclasses.dataclass
class Scenario:
    """Holder corpora (name -> documents), a public baseline, and labelled artifacts.

    Parameters
    ----------
    corpora : dict of str to list of str
        Each holder's documents.
    baseline : list of str
        Public baseline documents.
    artifacts : dict of str to str
        Artifact id -> artifact text.
    imitates : dict of str to str
        Artifact id -> name of the holder it imitates.

    Examples
    --------
    >>> sc = Scenario({"ann": ["a b"]}, ["c"], {"art-1": "a b"}, {"art-1": "ann"})
    >>> sc.imitates["art-1"]
    'ann'
    """

    corpora: dict[str, list[str]]
    baseline: list[str]
    artifacts: dict[str, str]
    imitates: dict[str, str]  # artifact id -> holder it imitates


def make_scenario(seed: int | np.random.Generator | None = 0, *, n_holders: int = 8,
                  holders: list[HolderStyle] | None = None, docs_per_holder: int = 8,
                  sentences_per_doc: int = 20, baseline_docs: int = 16,
                  artifacts_per_holder: int = 2, sentences_per_artifact: int = 4,
                  imitation: float = 1.0) -> Scenario:
    """Generate corpora, a baseline and artifacts; ``imitation`` is the fraction of an
    artifact's sentences written in the imitated holder's voice (the rest are baseline).

    Parameters
    ----------
    seed : int, Generator or None, default=0
        Seeds the generator (same seed, same scenario).
    n_holders : int, default=8
        Number of holders when ``holders`` is None (see :func:`default_holders`).
    holders : list of HolderStyle or None, default=None
        The holders to generate; None uses ``default_holders(n_holders)``.
    docs_per_holder : int, default=8
        Documents per holder.
    sentences_per_doc : int, default=20
        Sentences per document (holder and baseline).
    baseline_docs : int, default=16
        Baseline documents.
    artifacts_per_holder : int, default=2
        Artifacts imitating each holder.
    sentences_per_artifact : int, default=4
        Sentences per artifact.
    imitation : float, default=1.0
        Probability, per artifact sentence, of the imitated holder's voice.

    Returns
    -------
    Scenario
        Corpora, baseline, artifacts (ids ``art-<holder>-<k>``) and their labels.

    Raises
    ------
    RoyaltyInputError
        If ``imitation`` is outside [0, 1] or ``n_holders`` outside 1..64.

    Examples
    --------
    >>> sc = make_scenario(0, n_holders=2, docs_per_holder=1, sentences_per_doc=2,
    ...                    baseline_docs=1, artifacts_per_holder=1)
    >>> sorted(sc.corpora), len(sc.artifacts)
    (['h01-astronomy-plain', 'h02-cooking-exclaim'], 2)
    >>> sc.imitates["art-h01-astronomy-plain-1"]
    'h01-astronomy-plain'
    """
    if not 0.0 <= imitation <= 1.0:
        raise RoyaltyInputError(f"imitation must be in [0, 1], got {imitation}")
    rng = make_rng(seed)
    holders = holders or default_holders(n_holders)
    corpora = {h.name: [text(rng, h, sentences_per_doc) for _ in range(docs_per_holder)]
               for h in holders}
    baseline = [text(rng, None, sentences_per_doc) for _ in range(baseline_docs)]
    artifacts, imitates = {}, {}
    for h in holders:
        for a in range(artifacts_per_holder):
            voices = rng.random(sentences_per_artifact) < imitation
            key = f"art-{h.name}-{a + 1}"
            artifacts[key] = " ".join(sentence(rng, h if v else None) for v in voices)
            imitates[key] = h.name
    return Scenario(corpora, baseline, artifacts, imitates)
