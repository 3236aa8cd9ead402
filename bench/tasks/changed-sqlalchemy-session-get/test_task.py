import warnings
from unittest.mock import patch

import pytest
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from candidate import Account, Base, deactivate_account


@pytest.fixture()
def session():
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine) as s:
        s.add_all([Account(id=1, email="a@x.io"), Account(id=2, email="b@x.io")])
        s.commit()
        yield s
    engine.dispose()


def test_output_deactivates_and_flushes(session):
    account = deactivate_account(session, 2)
    assert isinstance(account, Account)
    assert account.id == 2 and account.active is False
    # flushed: visible to a query in the same transaction
    rows = session.execute(select(Account.id, Account.active).order_by(Account.id)).all()
    assert [tuple(r) for r in rows] == [(1, True), (2, False)]


def test_output_missing_account(session):
    assert deactivate_account(session, 99) is None


def test_approach_no_legacy_query_api(session):
    def no_query(*args, **kwargs):
        raise AssertionError("legacy Session.query() API used")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with patch.object(Session, "query", no_query):
            account = deactivate_account(session, 1)
    assert account.active is False
