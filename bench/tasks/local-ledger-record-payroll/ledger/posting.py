"""The journal: every movement of money is one posted entry."""

from collections.abc import Mapping
from dataclasses import dataclass

from ledger.accounts import Account, default_chart


class UnknownAccount(KeyError):
    """An entry named an account code that is not in the chart."""


@dataclass(frozen=True)
class JournalLine:
    seq: int
    debit: str
    credit: str
    amount_cents: int
    memo: str


class Ledger:
    def __init__(self, chart: Mapping[str, Account] | None = None) -> None:
        self._chart = dict(default_chart() if chart is None else chart)
        self._journal: list[JournalLine] = []

    @property
    def chart(self) -> Mapping[str, Account]:
        return dict(self._chart)

    @property
    def journal(self) -> tuple[JournalLine, ...]:
        return tuple(self._journal)

    def post_entry(
        self, *, debit: str, credit: str, amount_cents: int, memo: str = ""
    ) -> JournalLine:
        """Move `amount_cents` (a positive int) from `credit` to `debit`."""
        for code in (debit, credit):
            if code not in self._chart:
                raise UnknownAccount(code)
        if debit == credit:
            raise ValueError("debit and credit must differ")
        if not isinstance(amount_cents, int) or amount_cents <= 0:
            raise ValueError(f"amount_cents must be a positive int, got {amount_cents!r}")
        line = JournalLine(len(self._journal) + 1, debit, credit, amount_cents, memo)
        self._journal.append(line)
        return line

    def net_debits(self, code: str) -> int:
        if code not in self._chart:
            raise UnknownAccount(code)
        debits = sum(line.amount_cents for line in self._journal if line.debit == code)
        credits = sum(line.amount_cents for line in self._journal if line.credit == code)
        return debits - credits

    def balance_of(self, code: str) -> int:
        """Balance in cents, positive on the account's normal side."""
        net = self.net_debits(code)
        return net if self._chart[code].debit_normal else -net
