"""After the decision: the venue's camera-ready deadline, the camera-ready
PDF of an accepted paper and the supplementary material (one zip per paper). Who may upload
and download, and until when, is the authority's (``UPLOAD_CAMERA_READY``,
``UPLOAD_SUPPLEMENTARY``, ``DOWNLOAD_PDF``, ``DOWNLOAD_SUPPLEMENTARY``)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from icml25.review import models as m
from icml25.review.authority import Action, Viewer, authorize, facts_for
from icml25.review.errors import NotFound, ServiceError
from icml25.review.security import check_pdf, check_zip, format_size
from icml25.review.services.base import Service, utcnow
from icml25.review.visibility import Bundle, can
from icml25.review.workflow import Phase


class CameraReady(Service):
    """Camera-ready versions and supplementary material."""

    def set_camera_ready_deadline(self, venue: m.Venue, deadline: str) -> str:
        """The camera-ready deadline (chairs): 'YYYY-MM-DD' (the end of that day, UTC) or an
        ISO time; empty: none (uploads stay open through notification)."""
        authorize(Action.MANAGE_MEMBERS, facts_for(self.viewer(venue), None, Phase(venue.phase)))
        value = (deadline or "").strip()
        if value:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise ServiceError("the camera-ready deadline must be a date (YYYY-MM-DD) or an "
                                   "ISO time") from None
        if len(value) > 40:
            raise ServiceError("the camera-ready deadline is too long")
        venue.camera_ready_deadline = value
        self._audit(venue.id, "venue.camera_ready_deadline", f"venue:{venue.id}", deadline=value)
        self._commit()
        return value

    def upload_camera_ready(self, sub_id: int, data: bytes) -> dict:
        """Store the camera-ready PDF of an accepted paper (its authors, before the deadline;
        checked like the submission's PDF). A new upload replaces the previous one."""
        b = self.bundle(sub_id)
        authorize(Action.UPLOAD_CAMERA_READY, facts_for(self.viewer(b.venue), b))
        check_pdf(data, b.venue.max_pdf_bytes)
        sub = b.submission
        path, digest = self._store_upload(b.venue, f"{sub.number}-camera", data, "pdf")
        sub.camera_path, sub.camera_sha256, sub.camera_size = path, digest, len(data)
        sub.camera_at = utcnow()
        self._audit(b.venue.id, "submission.camera_ready", f"submission:{sub.id}",
                    sha256=digest, size=len(data))
        self._commit()
        return {"sha256": digest, "size": format_size(len(data))}

    def upload_supplementary(self, sub_id: int, data: bytes) -> dict:
        """Store the supplementary material, a zip of at most ``max_supplementary_bytes``
        (its authors: with the submission, or with the camera-ready version)."""
        b = self.bundle(sub_id)
        authorize(Action.UPLOAD_SUPPLEMENTARY, facts_for(self.viewer(b.venue), b))
        n_files = check_zip(data, self.settings.max_supplementary_bytes)
        sub = b.submission
        path, digest = self._store_upload(b.venue, f"{sub.number}-supplementary", data, "zip")
        sub.supp_path, sub.supp_sha256, sub.supp_size = path, digest, len(data)
        self._audit(b.venue.id, "submission.supplementary", f"submission:{sub.id}",
                    sha256=digest, size=len(data), files=n_files)
        self._commit()
        return {"sha256": digest, "size": format_size(len(data)), "files": n_files}

    def file_actions(self, viewer: Viewer, b: Bundle) -> dict:
        """The submission page's upload forms open to the actor."""
        return {"upload_camera_ready": can(viewer, Action.UPLOAD_CAMERA_READY, b),
                "upload_supplementary": can(viewer, Action.UPLOAD_SUPPLEMENTARY, b),
                "max_supplementary_size": format_size(self.settings.max_supplementary_bytes)}

    def camera_ready_pdf(self, sub_id: int) -> Path:
        """The camera-ready PDF, for whoever may download the paper."""
        b = self.read_bundle(sub_id)
        authorize(Action.DOWNLOAD_PDF, facts_for(self.viewer(b.venue), b))
        if not b.submission.camera_path:
            raise NotFound("no camera-ready version uploaded")
        return Path(b.submission.camera_path)

    def supplementary_zip(self, sub_id: int) -> Path:
        """The supplementary material, for whoever may download the paper."""
        b = self.read_bundle(sub_id)
        authorize(Action.DOWNLOAD_SUPPLEMENTARY, facts_for(self.viewer(b.venue), b))
        if not b.submission.supp_path:
            raise NotFound("no supplementary material uploaded")
        return Path(b.submission.supp_path)
