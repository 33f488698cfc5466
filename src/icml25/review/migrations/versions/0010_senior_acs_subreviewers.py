"""Roles: senior area chairs over area chairs (``senior_area_chairs``: one
SAC per AC and venue) and sub-reviewers invited by a reviewer for one paper (``subreviewers``).
The role ``sac`` itself is a membership like the others (no schema change).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=op.f(f"fk_{table}_{column}_{target}"), ondelete="CASCADE")


def upgrade() -> None:
    op.create_table(
        "senior_area_chairs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("venue_id", sa.Integer(), nullable=False),
        sa.Column("sac_id", sa.Integer(), nullable=False),
        sa.Column("ac_id", sa.Integer(), nullable=False),
        _fk("senior_area_chairs", "venue_id", "venues"),
        _fk("senior_area_chairs", "sac_id", "users"),
        _fk("senior_area_chairs", "ac_id", "users"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_senior_area_chairs")),
        sa.UniqueConstraint("venue_id", "ac_id", name=op.f("uq_senior_area_chairs_venue_id")))
    with op.batch_alter_table("senior_area_chairs", schema=None) as batch_op:
        for col in ("ac_id", "sac_id", "venue_id"):
            batch_op.create_index(batch_op.f(f"ix_senior_area_chairs_{col}"), [col], unique=False)
    op.create_table(
        "subreviewers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("inviter_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _fk("subreviewers", "submission_id", "submissions"),
        _fk("subreviewers", "inviter_id", "users"),
        _fk("subreviewers", "user_id", "users"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subreviewers")),
        sa.UniqueConstraint("submission_id", "user_id", name=op.f("uq_subreviewers_submission_id")))
    with op.batch_alter_table("subreviewers", schema=None) as batch_op:
        for col in ("inviter_id", "submission_id", "user_id"):
            batch_op.create_index(batch_op.f(f"ix_subreviewers_{col}"), [col], unique=False)


def downgrade() -> None:
    op.drop_table("subreviewers")
    op.drop_table("senior_area_chairs")
