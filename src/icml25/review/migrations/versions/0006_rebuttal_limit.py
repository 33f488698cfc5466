"""A rebuttal length limit per venue: ``venues.max_rebuttal_chars``, the most characters
of one response to one review (5,000 by default).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_rebuttal_chars", sa.Integer(), nullable=False,
                                      server_default="5000"))


def downgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.drop_column("max_rebuttal_chars")
