"""Camera-ready versions and supplementary material: only the authors of a
paper with an accepting decision type upload the camera-ready PDF, only before the venue's
camera-ready deadline, checked like the submission's PDF; the supplementary material is one
zip, checked by content and size-limited by a setting, readable by whoever may read the
paper."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from review_helpers import csrf_of, service_as, web_login
from sqlalchemy import select

from icml25.review import models as m
from icml25.review.demo import DEMO_PASSWORD, Cast, populate_venue
from icml25.review.errors import NotAllowed, ServiceError, UploadError
from icml25.review.security import ZIP_MAX_EXPANSION, check_zip, minimal_pdf
from icml25.review.workflow import Phase

CAST = Cast()
TYPES = [{"key": "oral", "label": "Accept (oral)", "accepted": True},
         {"key": "poster", "label": "Accept (poster)", "accepted": True},
         {"key": "reject", "label": "Reject", "accepted": False}]


def make_zip(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


GOOD_ZIP = make_zip({"code/train.py": b"print('train')\n", "data/README": b"seeds 0-4\n"})


def test_a_zip_is_checked_by_content():
    assert check_zip(GOOD_ZIP, 1 << 20) == 2
    assert check_zip(make_zip({}), 1 << 20) == 0  # an empty archive is a zip
    with pytest.raises(UploadError, match="empty"):
        check_zip(b"", 1 << 20)
    with pytest.raises(UploadError, match="too large"):
        check_zip(GOOD_ZIP, len(GOOD_ZIP) - 1)
    with pytest.raises(UploadError, match="not a zip"):
        check_zip(minimal_pdf(), 1 << 20)
    with pytest.raises(UploadError, match="cannot be read"):
        check_zip(GOOD_ZIP[: len(GOOD_ZIP) // 2], 1 << 20)  # cut short: no directory
    # a flipped byte in a stored member: the CRC check finds it
    stored = make_zip({"a.txt": b"A" * 200}, zipfile.ZIP_STORED)
    at = stored.index(b"A" * 200) + 7
    damaged = stored[:at] + b"B" + stored[at + 1:]
    with pytest.raises(UploadError, match="damaged"):
        check_zip(damaged, 1 << 20)
    with pytest.raises(UploadError, match="unsafe path"):
        check_zip(make_zip({"../../etc/passwd": b"x"}), 1 << 20)
    with pytest.raises(UploadError, match="unpacks to more"):  # a small zip bomb
        check_zip(make_zip({"zeros": bytes(ZIP_MAX_EXPANSION * 4096 + 1)}), 4096)


@pytest.fixture
def decided(db, settings):
    """A venue at notification: paper 1 'poster' (accepted), paper 2 'reject'."""
    def on_phase(phase: Phase) -> None:
        if phase is Phase.SUBMISSION:
            v = db.scalar(select(m.Venue).where(m.Venue.slug == "cr"))
            service_as(db, settings, CAST.chair).set_decision_types(v, TYPES)

    venue = populate_venue(db, settings, "cr", Phase.META_REVIEW, on_phase=on_phase)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)
    subs = db.scalars(select(m.Submission).where(m.Submission.venue_id == venue.id)
                      .order_by(m.Submission.number)).all()
    chair.decide(subs[0].id, "poster")
    chair.decide(subs[1].id, "reject")
    return venue, subs


def test_camera_ready_for_accepted_papers_by_their_authors_before_the_deadline(
        db, settings, decided):
    venue, (accepted, rejected) = decided
    author = service_as(db, settings, CAST.authors[0])
    pdf = minimal_pdf("camera ready")
    with pytest.raises(NotAllowed, match="phase"):  # decisions are not released yet
        author.upload_camera_ready(accepted.id, pdf)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # notification
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    chair.set_camera_ready_deadline(venue, tomorrow)
    with pytest.raises(ServiceError, match="date"):
        chair.set_camera_ready_deadline(venue, "next Friday")
    with pytest.raises(NotAllowed):
        author.set_camera_ready_deadline(venue, tomorrow)
    with pytest.raises(NotAllowed, match="accepted papers"):
        author.upload_camera_ready(rejected.id, pdf)
    for email in (CAST.chair, CAST.ac, CAST.reviewers[0]):
        with pytest.raises(NotAllowed, match="authors"):
            service_as(db, settings, email).upload_camera_ready(accepted.id, pdf)
    with pytest.raises(UploadError, match="not a PDF"):
        author.upload_camera_ready(accepted.id, GOOD_ZIP)
    with pytest.raises(UploadError, match="too large"):
        venue.max_pdf_bytes = len(pdf) - 1
        author.upload_camera_ready(accepted.id, pdf)
    db.rollback()
    out = author.upload_camera_ready(accepted.id, pdf)
    assert out["size"] == f"{len(pdf)} bytes"
    # readable by whoever may read the paper: its co-author, reviewers, AC, chair
    page = service_as(db, settings, CAST.authors[1]).submission_page(accepted.id)
    assert page["camera_ready"]["sha256"] == out["sha256"]
    for email in (CAST.chair, CAST.ac):
        path = service_as(db, settings, email).camera_ready_pdf(accepted.id)
        assert path.read_bytes() == pdf
    # after the deadline: closed (the deadline is read at each request)
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    chair.set_camera_ready_deadline(venue, yesterday)
    with pytest.raises(NotAllowed, match="deadline has passed"):
        author.upload_camera_ready(accepted.id, pdf)
    assert author.submission_page(accepted.id)["can"]["upload_camera_ready"] is False


def test_supplementary_material_with_the_submission_and_the_camera_ready(db, settings, tmp_path):
    venue = populate_venue(db, settings, "supp", Phase.SUBMISSION, n_papers=1)
    sub = db.scalar(select(m.Submission).where(m.Submission.venue_id == venue.id))
    author = service_as(db, settings, CAST.authors[0])
    with pytest.raises(UploadError, match="not a zip"):
        author.upload_supplementary(sub.id, b"MZ\x90\x00 an executable")
    big = make_zip({"table.bin": bytes(range(256)) * 12}, zipfile.ZIP_STORED)
    settings.max_supplementary_bytes = len(big) - 1  # the setting is read at each upload
    with pytest.raises(UploadError, match="too large"):
        author.upload_supplementary(sub.id, big)
    settings.max_supplementary_bytes = 1 << 20
    out = author.upload_supplementary(sub.id, GOOD_ZIP)
    assert out["files"] == 2
    with pytest.raises(NotAllowed):
        service_as(db, settings, CAST.reviewers[0]).upload_supplementary(sub.id, GOOD_ZIP)
    chair = service_as(db, settings, CAST.chair)
    chair.advance_phase(venue)  # bidding: the authors can no longer change it
    with pytest.raises(NotAllowed):
        author.upload_supplementary(sub.id, GOOD_ZIP)
    # bidders see the abstract, not the paper: no supplementary material for them
    bidder = service_as(db, settings, CAST.reviewers[0])
    assert "supplementary" not in bidder.submission_page(sub.id)
    with pytest.raises(NotAllowed):
        bidder.supplementary_zip(sub.id)
    assert chair.supplementary_zip(sub.id).read_bytes() == GOOD_ZIP
    assert chair.submission_page(sub.id)["supplementary"]["size"]


def test_camera_ready_and_supplementary_through_the_web_and_the_api(client, db, settings,
                                                                    decided):
    venue, (accepted, rejected) = decided
    service_as(db, settings, CAST.chair).advance_phase(venue)
    web_login(client, CAST.authors[0], DEMO_PASSWORD)
    page = client.get(f"/s/{accepted.id}").text
    assert "Upload camera-ready" in page and "Upload supplementary material" in page
    assert "Upload camera-ready" not in client.get(f"/s/{rejected.id}").text
    token = csrf_of(page)
    r = client.post(f"/s/{accepted.id}/camera-ready", data={"csrf_token": token},
                    files={"pdf": ("final.pdf", minimal_pdf("final"), "application/pdf")})
    assert r.status_code == 200 and "Camera-ready version uploaded" in r.text
    assert client.get(f"/s/{accepted.id}/camera-ready.pdf").content == minimal_pdf("final")
    r = client.post(f"/s/{accepted.id}/supplementary", data={"csrf_token": token},
                    files={"archive": ("x.zip", b"not a zip at all", "application/zip")})
    assert r.status_code == 400 and "not a zip" in r.text
    r = client.post(f"/s/{accepted.id}/supplementary", data={"csrf_token": token},
                    files={"archive": ("code.zip", GOOD_ZIP, "application/zip")})
    assert r.status_code == 200 and "2 files" in r.text
    assert client.get(f"/s/{accepted.id}/supplementary.zip").content == GOOD_ZIP
    # the API: the co-author replaces the camera-ready; an outsider reads nothing
    tok = service_as(db, settings, CAST.authors[1]).create_api_token("t")
    h = {"Authorization": f"Bearer {tok}"}
    r = client.put(f"/api/v1/submissions/{accepted.id}/camera-ready", headers=h,
                   content=minimal_pdf("v2"))
    assert r.status_code == 200 and len(r.json()["sha256"]) == 64
    r = client.put(f"/api/v1/submissions/{rejected.id}/camera-ready", headers=h,
                   content=minimal_pdf("v2"))
    assert r.status_code == 403
    assert client.get(f"/api/v1/submissions/{accepted.id}/camera-ready",
                      headers=h).content == minimal_pdf("v2")
    assert client.get(f"/api/v1/submissions/{accepted.id}/supplementary",
                      headers=h).content == GOOD_ZIP
    db.add(m.User(email="out@side.example", name="Out", password_hash="x",
                  email_verified_at=datetime.now(UTC)))
    db.commit()
    out = service_as(db, settings, "out@side.example").create_api_token("t")
    assert client.get(f"/api/v1/submissions/{accepted.id}/supplementary",
                      headers={"Authorization": f"Bearer {out}"}).status_code == 403
    chair_tok = service_as(db, settings, CAST.chair).create_api_token("t")
    r = client.put("/api/v1/venues/cr/camera-ready-deadline",
                   headers={"Authorization": f"Bearer {chair_tok}"},
                   json={"deadline": "2020-01-01"})
    assert r.status_code == 200 and r.json() == {"deadline": "2020-01-01"}
    r = client.put(f"/api/v1/submissions/{accepted.id}/camera-ready", headers=h,
                   content=minimal_pdf("v3"))
    assert r.status_code == 403 and "deadline" in r.text
