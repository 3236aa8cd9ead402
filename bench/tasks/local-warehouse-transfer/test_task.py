import pytest
from candidate import transfer_stock
from warehouse import Manifest, UnknownSku, Warehouse


def make_pair() -> tuple[Warehouse, Warehouse]:
    north = Warehouse("north", ["BOLT-M6", "NUT-M6", "ANCHOR"])
    north.restock_from(Manifest.from_text("BOLT-M6 x 40 @ L1\nANCHOR x 5 @ L9\n"))
    south = Warehouse("south", ["BOLT-M6", "NUT-M6"])
    return north, south


def test_output_moves_stock():
    north, south = make_pair()
    assert transfer_stock(north, south, "BOLT-M6", 15) == 15
    assert (north.on_hand("BOLT-M6"), south.on_hand("BOLT-M6")) == (25, 15)


def test_output_shortage_moves_nothing():
    north, south = make_pair()
    assert transfer_stock(north, south, "BOLT-M6", 41) == 0
    assert (north.on_hand("BOLT-M6"), south.on_hand("BOLT-M6")) == (40, 0)


def test_output_unknown_at_destination():
    north, south = make_pair()
    with pytest.raises(UnknownSku):
        transfer_stock(north, south, "ANCHOR", 2)
    assert north.on_hand("ANCHOR") == 5
    assert north.movements == [("BOLT-M6", 40), ("ANCHOR", 5)]


def test_approach_uses_warehouse_movements_and_lots():
    north, south = make_pair()
    transfer_stock(north, south, "BOLT-M6", 15)
    transfer_stock(south, north, "BOLT-M6", 4)
    # Movements are only logged by pick/restock_from; lots only by restock_from.
    assert north.movements[-2:] == [("BOLT-M6", -15), ("BOLT-M6", 4)]
    assert south.movements == [("BOLT-M6", 15), ("BOLT-M6", -4)]
    assert south.lots["BOLT-M6"] == ["XFER-north"]
    assert north.lots["BOLT-M6"] == ["L1", "XFER-south"]
