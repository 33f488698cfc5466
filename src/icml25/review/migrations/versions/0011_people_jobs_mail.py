"""People and jobs: invitations, further e-mail addresses, affiliation history, publication
lists and co-authors, declared and overridden conflicts, member quotas, mail preferences,
throttling of password resets, the job queue, and the e-mail delivery state (Message-ID,
status, attempts, last error).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def _fk(table: str, column: str, target: str, ondelete: str = "CASCADE") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete)


def _indexes(table: str, *cols: str) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for col in cols:
            batch_op.create_index(batch_op.f(f"ix_{table}_{col}"), [col], unique=False)


def _pk(table: str) -> sa.PrimaryKeyConstraint:
    return sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}"))


def _backfill_name_keys() -> None:
    from icml25.review.people import name_key

    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT id, name FROM submission_authors")).all()
    for rid, name in rows:
        conn.execute(sa.text("UPDATE submission_authors SET name_key = :k WHERE id = :i"),
                     {"k": name_key(name or ""), "i": rid})


def upgrade() -> None:
    with op.batch_alter_table("emails", schema=None) as b:
        b.add_column(sa.Column("message_id", sa.String(200), nullable=True))
        b.add_column(sa.Column("status", sa.String(16), nullable=False,
                               server_default="queued"))
        b.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        b.add_column(sa.Column("last_error", sa.Text(), nullable=False, server_default=""))
        b.create_unique_constraint(b.f("uq_emails_message_id"), ["message_id"])
    # the mail sent before this revision counts as sent
    op.execute("UPDATE emails SET status = 'sent' WHERE sent_at IS NOT NULL")
    with op.batch_alter_table("email_tokens", schema=None) as b:
        b.add_column(sa.Column("target", sa.String(254), nullable=False, server_default=""))
    with op.batch_alter_table("memberships", schema=None) as b:
        b.add_column(sa.Column("quota", sa.Integer(), nullable=True))
    with op.batch_alter_table("submission_authors", schema=None) as b:
        b.add_column(sa.Column("name_key", sa.String(200), nullable=False, server_default=""))
        b.create_index(b.f("ix_submission_authors_name_key"), ["name_key"], unique=False)
    _backfill_name_keys()
    with op.batch_alter_table("users", schema=None) as b:
        b.add_column(sa.Column("mail_preference", sa.String(16), nullable=False,
                               server_default="immediate"))
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", TZ, nullable=False),
        sa.Column("locked_by", sa.String(80), nullable=False),
        sa.Column("locked_until", TZ, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("venue_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("finished_at", TZ, nullable=True),
        _fk("jobs", "venue_id", "venues"),
        _fk("jobs", "created_by", "users", "SET NULL"),
        _pk("jobs"),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_jobs_idempotency_key")))
    _indexes("jobs", "status", "run_after", "venue_id", "created_by")
    op.create_table(
        "invitations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("venue_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("affiliation", sa.String(200), nullable=False),
        sa.Column("quota", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("invited_by", sa.Integer(), nullable=True),
        sa.Column("sent_count", sa.Integer(), nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("answered_at", TZ, nullable=True),
        _fk("invitations", "venue_id", "venues"),
        _fk("invitations", "user_id", "users", "SET NULL"),
        _fk("invitations", "invited_by", "users", "SET NULL"),
        _pk("invitations"),
        sa.UniqueConstraint("token_hash", name=op.f("uq_invitations_token_hash")),
        sa.UniqueConstraint("venue_id", "email", "role", name=op.f("uq_invitations_venue_id")))
    _indexes("invitations", "venue_id", "user_id", "invited_by")
    op.create_table(
        "user_emails",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("verified_at", TZ, nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        _fk("user_emails", "user_id", "users"),
        _pk("user_emails"),
        sa.UniqueConstraint("email", name=op.f("uq_user_emails_email")))
    _indexes("user_emails", "user_id")
    op.create_table(
        "affiliations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("institution", sa.String(200), nullable=False),
        sa.Column("domain", sa.String(120), nullable=False),
        sa.Column("start_year", sa.Integer(), nullable=True),
        sa.Column("end_year", sa.Integer(), nullable=True),
        _fk("affiliations", "user_id", "users"),
        _pk("affiliations"))
    _indexes("affiliations", "user_id", "domain")
    op.create_table(
        "publications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("year", sa.Integer(), nullable=True),
        sa.Column("abstract", sa.Text(), nullable=False),
        sa.Column("authors", sa.Text(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        _fk("publications", "user_id", "users"),
        _pk("publications"))
    _indexes("publications", "user_id")
    op.create_table(
        "coauthors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("publication_id", sa.Integer(), nullable=False),
        sa.Column("name_key", sa.String(200), nullable=False),
        _fk("coauthors", "user_id", "users"),
        _fk("coauthors", "publication_id", "publications"),
        _pk("coauthors"))
    _indexes("coauthors", "user_id", "publication_id", "name_key")
    op.create_table(
        "conflict_declarations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("conflicted", sa.Boolean(), nullable=False),
        sa.Column("by_chair", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(300), nullable=False),
        sa.Column("declared_by", sa.Integer(), nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        _fk("conflict_declarations", "submission_id", "submissions"),
        _fk("conflict_declarations", "user_id", "users"),
        _fk("conflict_declarations", "declared_by", "users", "SET NULL"),
        _pk("conflict_declarations"),
        sa.UniqueConstraint("submission_id", "user_id",
                            name=op.f("uq_conflict_declarations_submission_id")))
    _indexes("conflict_declarations", "submission_id", "user_id", "declared_by")
    op.create_table(
        "rate_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(300), nullable=False),
        sa.Column("at", TZ, nullable=False),
        _pk("rate_events"))
    _indexes("rate_events", "key")


def downgrade() -> None:
    for table in ("rate_events", "conflict_declarations", "coauthors", "publications",
                  "affiliations", "user_emails", "invitations", "jobs"):
        op.drop_table(table)
    with op.batch_alter_table("users", schema=None) as b:
        b.drop_column("mail_preference")
    with op.batch_alter_table("submission_authors", schema=None) as b:
        b.drop_index(b.f("ix_submission_authors_name_key"))
        b.drop_column("name_key")
    with op.batch_alter_table("memberships", schema=None) as b:
        b.drop_column("quota")
    with op.batch_alter_table("email_tokens", schema=None) as b:
        b.drop_column("target")
    with op.batch_alter_table("emails", schema=None) as b:
        b.drop_constraint(b.f("uq_emails_message_id"), type_="unique")
        b.drop_column("last_error")
        b.drop_column("attempts")
        b.drop_column("status")
        b.drop_column("message_id")
