"""Order fulfilment: ship what we can, backorder the rest."""

from warehouse import StockShortage, Warehouse


def fill_orders(
    wh: Warehouse, orders: list[tuple[str, str, int]]
) -> tuple[dict[str, int], dict[str, int]]:
    """Take stock out of `wh` for each (order_id, sku, quantity), in order.

    When the warehouse holds enough units the whole quantity ships. When it
    does not, ship every unit it still holds of that sku (if any) and backorder
    the remainder. Return (shipped, backordered): two dicts keyed by order id;
    an order appears in `backordered` only if something was backordered.
    """
    