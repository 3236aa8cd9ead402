import logging
from unittest.mock import patch

from candidate import receive_delivery
from warehouse import Manifest, Warehouse

NOTE = """\
# Supplier: Acme Fasteners, delivery 2024-07-03
BOLT-M6 x 40 @ L2024-07
GADGET-9 x 3 @ L77

NUT-M6 x 120 @ L2024-06   # second pallet
GADGET-9 x 2 @ L78
ANCHOR x 1 @ L1
BOLT-M6 x 10 @ L2024-08
"""


def make_warehouse() -> Warehouse:
    return Warehouse("north", ["BOLT-M6", "NUT-M6", "WASHER"])


def test_output_rejected_skus():
    assert receive_delivery(make_warehouse(), NOTE) == ["ANCHOR", "GADGET-9"]
    assert receive_delivery(make_warehouse(), "# nothing today\n") == []


def test_output_stock_booked_in():
    wh = make_warehouse()
    receive_delivery(wh, NOTE)
    assert wh.on_hand("BOLT-M6") == 50
    assert wh.on_hand("NUT-M6") == 120
    assert wh.on_hand("WASHER") == 0


def test_output_warns_once_per_rejected_line(caplog):
    with caplog.at_level(logging.WARNING):
        receive_delivery(make_warehouse(), NOTE)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 3


def test_approach_uses_manifest_and_restock():
    wh = make_warehouse()
    with patch.object(Manifest, "from_text", wraps=Manifest.from_text) as spy:
        receive_delivery(wh, NOTE)
    spy.assert_called_once_with(NOTE)
    # Lots are only recorded by Warehouse.restock_from.
    assert wh.lots["BOLT-M6"] == ["L2024-07", "L2024-08"]
    assert wh.lots["NUT-M6"] == ["L2024-06"]
