from candidate import fill_orders
from warehouse import Manifest, Warehouse

ORDERS = [
    ("SO-1", "BOLT-M6", 30),
    ("SO-2", "BOLT-M6", 25),
    ("SO-3", "NUT-M6", 10),
    ("SO-4", "BOLT-M6", 5),
    ("SO-5", "WASHER", 7),
]


def make_warehouse() -> Warehouse:
    wh = Warehouse("north", ["BOLT-M6", "NUT-M6", "WASHER"])
    wh.restock_from(Manifest.from_text("BOLT-M6 x 40 @ L1\nWASHER x 7 @ L2\n"))
    return wh


def test_output_shipped_and_backordered():
    wh = make_warehouse()
    shipped, backordered = fill_orders(wh, ORDERS)
    assert shipped == {"SO-1": 30, "SO-2": 10, "SO-3": 0, "SO-4": 0, "SO-5": 7}
    assert backordered == {"SO-2": 15, "SO-3": 10, "SO-4": 5}


def test_output_stock_levels():
    wh = make_warehouse()
    fill_orders(wh, ORDERS)
    assert [wh.on_hand(sku) for sku in ("BOLT-M6", "NUT-M6", "WASHER")] == [0, 0, 0]
    assert fill_orders(make_warehouse(), []) == ({}, {})


def test_approach_stock_taken_through_warehouse():
    wh = make_warehouse()
    fill_orders(wh, ORDERS)
    # Only Warehouse.pick writes outgoing movements; nothing is taken for empty stock.
    assert [m for m in wh.movements if m[1] < 0] == [
        ("BOLT-M6", -30),
        ("BOLT-M6", -10),
        ("WASHER", -7),
    ]
