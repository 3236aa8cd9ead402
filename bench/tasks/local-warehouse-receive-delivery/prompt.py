"""Goods-in desk: book supplier deliveries into stock."""

import logging

from warehouse import Manifest, Warehouse

log = logging.getLogger(__name__)


def receive_delivery(wh: Warehouse, delivery_note: str) -> list[str]:
    """Book the supplier's delivery note into `wh` and return the skus it could not take.

    `delivery_note` is the text the supplier sends, in the warehouse's manifest
    format (one "SKU x UNITS @ LOT" per line, # comments allowed). Lines for skus
    the warehouse does not stock must not stop the rest from being booked in;
    return those skus sorted, each once, and log a warning for each such line.
    """
    