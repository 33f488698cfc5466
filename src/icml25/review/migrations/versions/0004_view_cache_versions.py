"""Versions for the view cache: ``submissions.version``, bumped with every change to
a submission or its rows, and the one-row ``view_epoch``, changed with every change to accounts,
memberships, venues, authors and assignments (see icml25/review/cache.py).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import random

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False,
                                      server_default="0"))
    epoch = op.create_table(
        "view_epoch",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_view_epoch")),
    )
    op.bulk_insert(epoch, [{"id": 1, "value": random.getrandbits(62)}])


def downgrade() -> None:
    op.drop_table("view_epoch")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("version")
