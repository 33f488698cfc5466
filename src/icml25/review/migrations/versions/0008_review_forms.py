"""Configurable, versioned review forms: the table
``review_form_versions`` (one row per saved version of a venue's form), the venue's newest
version (``venues.review_form_version``; 0, the built-in form) and, per review, the version it
is written with (``reviews.form_version``; 0 for every existing review) and its answers to the
added fields (``reviews.answers``, JSON).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_form_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("venue_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["created_by"], ["users.id"],
                                name=op.f("fk_review_form_versions_created_by_users"),
                                ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["venue_id"], ["venues.id"],
                                name=op.f("fk_review_form_versions_venue_id_venues"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_form_versions")),
        sa.UniqueConstraint("venue_id", "version",
                            name=op.f("uq_review_form_versions_venue_id")),
    )
    with op.batch_alter_table("review_form_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_review_form_versions_venue_id"), ["venue_id"],
                              unique=False)
        batch_op.create_index(batch_op.f("ix_review_form_versions_created_by"), ["created_by"],
                              unique=False)
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("review_form_version", sa.Integer(), nullable=False,
                                      server_default="0"))
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.add_column(sa.Column("form_version", sa.Integer(), nullable=False,
                                      server_default="0"))
        batch_op.add_column(sa.Column("answers", sa.Text(), nullable=False,
                                      server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("reviews", schema=None) as batch_op:
        batch_op.drop_column("answers")
        batch_op.drop_column("form_version")
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.drop_column("review_form_version")
    with op.batch_alter_table("review_form_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_review_form_versions_created_by"))
        batch_op.drop_index(batch_op.f("ix_review_form_versions_venue_id"))
    op.drop_table("review_form_versions")
