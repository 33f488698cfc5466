"""The decision e-mail per venue: ``venues.decision_mail``, a template with the fields
{number}, {title}, {venue} and {decision}; empty means the platform's default text.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decision_mail", sa.Text(), nullable=False,
                                      server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.drop_column("decision_mail")
