"""The web layer: server-rendered pages (:mod:`.pages`), the JSON API under ``/api/v1``
(:mod:`.api`), their request and response models (:mod:`.schemas`), the per-request
dependencies (:mod:`.deps`) and the app factory (:mod:`.app`).

Routes only parse input, call the services and render what they return; every decision about
who may see or do what is made by :mod:`icml25.review.authority`.
"""

from icml25.review.web.app import create_app

__all__ = ["create_app"]
