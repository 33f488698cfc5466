"""Custom decision types per venue: ``venues.decision_types``, a JSON list of
{key, label, accepted}; existing venues keep accept / reject.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

DEFAULT = ('[{"key": "accept", "label": "Accept", "accepted": true}, '
           '{"key": "reject", "label": "Reject", "accepted": false}]')


def upgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decision_types", sa.Text(), nullable=False,
                                      server_default=DEFAULT))


def downgrade() -> None:
    with op.batch_alter_table("venues", schema=None) as batch_op:
        batch_op.drop_column("decision_types")
