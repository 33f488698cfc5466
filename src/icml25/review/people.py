"""People's data, parsed offline: invitation CSV files, publication lists (BibTeX, or CSV /
JSON exports of DBLP, OpenReview and Semantic Scholar profiles), author names as comparable
keys, and mail templates; and the background jobs that work on people (imports, venue-wide
conflicts, bulk mail, digests, late-review reminders).

Examples
--------
>>> name_key("Müller, Anna Maria")
'anna muller'
>>> render_template("Dear {name}, see {venue}.", {"name": "Ada", "venue": "ICML"})
'Dear Ada, see ICML.'
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from icml25.review.errors import ServiceError
from icml25.review.jobs import JobRun, job_kind

INVITABLE_ROLES = ("reviewer", "ac", "sac")
CSV_COLUMNS = ("email", "name", "role", "affiliation", "quota")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
#: the variables a bulk mail may use
TEMPLATE_VARIABLES = ("name", "email", "venue", "role", "missing_reviews", "link")


def name_key(name: str) -> str:
    """A person's name as a comparison key: accents and case dropped, "Last, First" turned
    round, the first given name and the family name kept.

    Parameters
    ----------
    name : str
        A name as written in a paper or a bibliography.

    Returns
    -------
    str
        ``"first last"`` in lower case ASCII ("" for no name).

    Examples
    --------
    >>> name_key("  J. R. R.  Tolkien ")
    'j tolkien'
    >>> name_key("Diaz, Carla")
    'carla diaz'
    """
    text = unicodedata.normalize("NFKD", name or "")
    text = "".join(c for c in text if not unicodedata.combining(c))
    if "," in text:
        last, _, first = text.partition(",")
        text = f"{first} {last}"
    words = [w for w in re.split(r"[\s.]+", text.lower()) if w and w.strip("{}-'")]
    words = [re.sub(r"[^a-z0-9\-']", "", w) for w in words]
    words = [w for w in words if w]
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return f"{words[0]} {words[-1]}"


@dataclass
class InviteRow:
    """One valid row of an invitation CSV."""

    line: int
    email: str
    name: str
    role: str
    affiliation: str = ""
    quota: int | None = None


def parse_invitation_csv(text: str, max_quota: int) -> list[InviteRow]:
    """Parse ``email,name,role[,affiliation][,quota]`` rows (an optional header row).

    Every row is checked before anything is used; all errors are reported together, each with
    its line number, and then nothing of the file is applied.

    Parameters
    ----------
    text : str
        The file's contents.
    max_quota : int
        The venue's maximum papers per member (a row's quota may not exceed it).

    Returns
    -------
    list of InviteRow
        The rows, in file order.

    Raises
    ------
    ServiceError
        Listing every bad row ("line 3: ...").

    Examples
    --------
    >>> rows = parse_invitation_csv("email,name,role\\nada@x.org,Ada,reviewer\\n", 6)
    >>> (rows[0].line, rows[0].email, rows[0].quota)
    (2, 'ada@x.org', None)
    >>> parse_invitation_csv("ada@x.org,Ada,king\\n", 6)
    Traceback (most recent call last):
    ...
    icml25.review.errors.ServiceError: line 1: role must be one of reviewer, ac, sac (not 'king')
    """
    items, errors = [], []
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    for line, cells in enumerate(reader, start=1):
        cells = [c.strip() for c in cells]
        if not any(cells):
            continue
        if line == 1 and cells[0].lower() == "email":
            continue
        if len(cells) < 3 or len(cells) > 5:
            errors.append(f"line {line}: expected email,name,role[,affiliation][,quota] "
                          f"({len(cells)} columns)")
            continue
        cells += [""] * (5 - len(cells))
        items.append((line, *cells))
    return check_invitation_rows(items, max_quota, errors=errors)


def check_invitation_rows(items: list[tuple], max_quota: int, *, what: str = "line",
                          errors: list[str] | None = None) -> list[InviteRow]:
    """Check invitation rows ``(line, email, name, role, affiliation, quota text)``.

    Parameters
    ----------
    items : list of tuple
        The rows with their line (or position) numbers.
    max_quota : int
        The venue's maximum papers per member.
    what : str
        How errors name a row ("line 3", "invitation 3").
    errors : list of str, optional
        Errors found earlier (they are reported first).

    Returns
    -------
    list of InviteRow

    Raises
    ------
    ServiceError
        Naming every bad row; then no row is returned.

    Examples
    --------
    >>> check_invitation_rows([(1, "a@b.org", "A", "ac", "", "9")], 6, what="invitation")
    Traceback (most recent call last):
    ...
    icml25.review.errors.ServiceError: invitation 1: quota must be from 0 to the venue's maximum 6
    """
    errors = list(errors or [])
    rows: list[InviteRow] = []
    seen: dict[tuple[str, str], int] = {}
    for line, email, name, role, affiliation, quota_text in items:
        email = (email or "").strip().lower()
        name, role = (name or "").strip(), (role or "").strip().lower()
        quota_text = (quota_text or "").strip()
        problems = []
        if not EMAIL_RE.match(email):
            problems.append(f"invalid e-mail address '{email}'")
        if not name or len(name) > 200:
            problems.append("a name of 1 to 200 characters is required")
        if role not in INVITABLE_ROLES:
            problems.append(f"role must be one of {', '.join(INVITABLE_ROLES)} (not '{role}')")
        quota = None
        if quota_text:
            try:
                quota = int(quota_text)
            except ValueError:
                problems.append(f"quota must be a whole number (not '{quota_text}')")
            else:
                if not 0 <= quota <= max_quota:
                    problems.append(f"quota must be from 0 to the venue's maximum {max_quota}")
        if (email, role) in seen:
            problems.append(f"{email} is invited as {role} already on {what} "
                            f"{seen[email, role]}")
        if problems:
            errors.append(f"{what} {line}: " + "; ".join(problems))
            continue
        seen[email, role] = line
        rows.append(InviteRow(line, email, name, role, (affiliation or "").strip()[:200], quota))
    if errors:
        shown = errors[:50]
        more = f" (and {len(errors) - 50} more)" if len(errors) > 50 else ""
        raise ServiceError("; ".join(shown) + more)
    if not rows:
        raise ServiceError("no invitation rows were given")
    return rows


@dataclass
class Paper:
    """One entry of a publication list."""

    title: str
    year: int | None
    authors: list[str]
    abstract: str = ""


def _year(value: object) -> int | None:
    found = re.search(r"(19|20)\d\d", str(value or ""))
    return int(found.group(0)) if found else None


def parse_bibtex(text: str) -> list[Paper]:
    """The entries of a BibTeX file (with LaTeX accents decoded), via ``bibtexparser``.

    Parameters
    ----------
    text : str
        The ``.bib`` file.

    Returns
    -------
    list of Paper
        Entries with a title.

    Raises
    ------
    ServiceError
        When no entry could be read, naming the first unreadable line.

    Examples
    --------
    >>> p = parse_bibtex('@article{k, title={On {R}eview}, author={Lee, Kim and Bo Park},'
    ...                  ' year=2024}')[0]
    >>> (p.title, p.year, p.authors)
    ('On Review', 2024, ['Kim Lee', 'Bo Park'])
    """
    import bibtexparser
    from bibtexparser import middlewares as mw

    lib = bibtexparser.parse_string(text, append_middleware=[
        mw.LatexDecodingMiddleware(), mw.SeparateCoAuthors(), mw.SplitNameParts()])
    out = []
    for e in lib.entries:
        fields = {k.lower(): e[k] for k in e.fields_dict}
        title = re.sub(r"[{}]", "", str(fields.get("title", ""))).strip()
        if not title:
            continue
        names = []
        for n in fields.get("author", []) or []:
            if isinstance(n, str):
                names.append(n)
                continue
            full = " ".join(n.first + n.von + n.last + n.jr).strip()
            if full and full.lower() != "others":
                names.append(full)
        out.append(Paper(title[:500], _year(fields.get("year")), names,
                         str(fields.get("abstract", ""))[:5000]))
    if not out:
        where = (f" (line {lib.failed_blocks[0].start_line + 1} could not be read)"
                 if lib.failed_blocks else "")
        raise ServiceError(f"no BibTeX entry with a title was found{where}")
    return out


def _authors_of(value: object) -> list[str]:
    if isinstance(value, list):
        names = []
        for a in value:
            if isinstance(a, dict):
                names.append(str(a.get("name") or a.get("fullname") or a.get("text") or ""))
            else:
                names.append(str(a))
        return [n for n in names if n.strip()]
    if isinstance(value, dict):  # DBLP: {"author": [...]}
        return _authors_of(value.get("author") or value.get("authors") or [])
    text = str(value or "")
    parts = re.split(r"\s+and\s+|;|,(?=\s*[A-Z][a-z]+\s)" if " and " in text or ";" in text
                     else r",", text)
    return [p.strip() for p in parts if p.strip()]


def parse_profile_export(text: str) -> list[Paper]:
    """Papers from a CSV or JSON export of a DBLP, OpenReview or Semantic Scholar profile.

    Reads the common shapes: a JSON list of papers, or an object holding one under ``papers``,
    ``data``, ``notes``, ``publications`` or DBLP's ``result.hits.hit[].info``; each paper's
    ``title`` (OpenReview: ``content.title``, possibly ``{"value": ...}``), ``year`` (or a
    date), ``authors`` (names, or objects with ``name``) and ``abstract``. A CSV needs a
    ``title`` column; ``authors`` are separated by ``;`` or `` and ``.

    Parameters
    ----------
    text : str
        The file.

    Returns
    -------
    list of Paper

    Raises
    ------
    ServiceError
        When no paper with a title is found.

    Examples
    --------
    >>> parse_profile_export('[{"title": "A", "year": 2023, "authors": [{"name": "X Y"}]}]')
    [Paper(title='A', year=2023, authors=['X Y'], abstract='')]
    >>> parse_profile_export("title,year,authors\\nB,2021,Ann Lee; Bo Park\\n")[0].authors
    ['Ann Lee', 'Bo Park']
    """
    stripped = text.strip()
    items: list[dict] = []
    if stripped[:1] in "[{":
        try:
            data = json.loads(stripped)
        except ValueError as exc:
            raise ServiceError(f"the JSON file could not be read: {exc}") from None
        if isinstance(data, dict):
            hits = data.get("result", {}).get("hits", {}).get("hit") if isinstance(
                data.get("result"), dict) else None
            if hits:
                data = [h.get("info", h) for h in hits]
            else:
                data = next((data[k] for k in ("papers", "data", "notes", "publications")
                             if isinstance(data.get(k), list)), [data])
        items = [d for d in data if isinstance(d, dict)]
    else:
        items = list(csv.DictReader(io.StringIO(stripped.lstrip("\ufeff"))))
    out = []
    for d in items:
        d = {str(k).lower(): v for k, v in d.items()}
        content = d.get("content") if isinstance(d.get("content"), dict) else {}

        def field(name: str, d=d, content=content) -> object:  # noqa: ANN001
            v = d.get(name, content.get(name))
            return v.get("value") if isinstance(v, dict) and "value" in v else v

        title = str(field("title") or "").strip()
        if not title:
            continue
        year = _year(field("year") or field("date") or field("publicationdate")
                     or field("pdate"))
        out.append(Paper(title[:500], year, _authors_of(field("authors") or field("author")),
                         str(field("abstract") or "")[:5000]))
    if not out:
        raise ServiceError("no paper with a title was found in the file")
    return out


def parse_publications(text: str) -> list[Paper]:
    """BibTeX, or a CSV / JSON profile export (told apart by their first character)."""
    if not (text or "").strip():
        raise ServiceError("the publication list is empty")
    if text.lstrip().startswith("@") or re.search(r"^\s*@\w+\s*\{", text, re.M):
        return parse_bibtex(text)
    return parse_profile_export(text)


class _Strict(string.Formatter):
    def __init__(self, allowed: tuple[str, ...]) -> None:
        self.allowed = allowed

    def get_field(self, field_name, args, kwargs):  # noqa: ANN001, ANN201
        if field_name not in self.allowed:
            raise ServiceError(f"unknown template variable {{{field_name}}}; use "
                               + ", ".join("{" + v + "}" for v in self.allowed))
        return kwargs[field_name], field_name

    def format_field(self, value, format_spec):  # noqa: ANN001, ANN201
        if format_spec:
            raise ServiceError("template variables take no format spec")
        return str(value)


def render_template(template: str, values: dict[str, object],
                    allowed: tuple[str, ...] = TEMPLATE_VARIABLES) -> str:
    """Fill ``{variable}`` fields (only ``allowed`` ones; ``{{`` is a brace).

    Raises
    ------
    ServiceError
        For another variable, a format spec or a stray brace.

    Examples
    --------
    >>> render_template("{x}", {"x": 1})
    Traceback (most recent call last):
    ...
    icml25.review.errors.ServiceError: unknown template variable {x}; use {name}, ...
    """
    try:
        return _Strict(allowed).vformat(template, (), {k: values.get(k, "") for k in allowed})
    except ServiceError:
        raise
    except (ValueError, IndexError) as exc:
        raise ServiceError(f"the template is malformed: {exc}") from None


def this_year() -> int:
    return datetime.now(UTC).year


# ---------------------------------------------------------------------- jobs on people
def _service(run: JobRun, actor_id: int | None = None):  # noqa: ANN202
    from icml25.review import models as m
    from icml25.review.service import ReviewService

    actor = run.db.get(m.User, actor_id) if actor_id else None
    svc = ReviewService(run.db, run.settings, actor)
    svc.ctx.job = run  # type: ignore[attr-defined]
    return svc


@job_kind("invitations.import")
def _import_invitations(run: JobRun) -> dict:
    svc = _service(run, run.payload.get("actor_id"))
    return svc.run_invitation_import(run.payload["venue_id"], run.payload["csv"], run)


@job_kind("conflicts.venue")
def _venue_conflicts(run: JobRun) -> dict:
    svc = _service(run)
    return svc.recompute_venue_conflicts(run.payload["venue_id"], run)


@job_kind("assign.auto")
def _auto_assign(run: JobRun) -> dict:
    from icml25.review import models as m

    svc = _service(run, run.payload.get("actor_id"))
    run.progress(0, 1)
    return {"new_assignments": svc.auto_assign(run.db.get(m.Venue, run.payload["venue_id"]))}


@job_kind("mail.bulk")
def _bulk_mail(run: JobRun) -> dict:
    svc = _service(run, run.payload.get("actor_id"))
    return svc.run_bulk_mail(run.payload, run)


@job_kind("mail.digest")
def _digest(run: JobRun) -> dict:
    return _service(run).send_digests()


@job_kind("reminders.late")
def _late_reminders(run: JobRun) -> dict:
    return _service(run).send_late_reminders(run.payload.get("day"))
