"""Persistence helpers for the accounts service."""

from typing import Optional

from sqlalchemy import String
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(255), unique=True)
    active: Mapped[bool] = mapped_column(default=True)


def deactivate_account(session: Session, account_id: int) -> Optional[Account]:
    """Load the ``Account`` whose primary key is ``account_id``, set
    ``active`` to False and flush the session (do not commit).

    Returns the account, or None when no account has that id. Use the
    SQLAlchemy 2.0-style ORM API.
    """
    