"""Camera-ready and supplementary material: the venue's camera-ready
deadline, and per submission the camera-ready PDF and the supplementary zip (path, SHA-256,
size; the camera-ready's upload time).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

FILE_COLUMNS = (("camera_path", sa.String(500)), ("camera_sha256", sa.String(64)),
                ("camera_size", sa.Integer()), ("camera_at", sa.DateTime(timezone=True)),
                ("supp_path", sa.String(500)), ("supp_sha256", sa.String(64)),
                ("supp_size", sa.Integer()))


def upgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("camera_ready_deadline", sa.String(40), nullable=False,
                                      server_default=""))
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, kind in FILE_COLUMNS:
            batch_op.add_column(sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, _ in reversed(FILE_COLUMNS):
            batch_op.drop_column(name)
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.drop_column("camera_ready_deadline")
