"""A tiny double-entry ledger."""

from ledger.accounts import Account, AccountKind, default_chart
from ledger.posting import JournalLine, Ledger, UnknownAccount

__all__ = ["Account", "AccountKind", "JournalLine", "Ledger", "UnknownAccount", "default_chart"]
