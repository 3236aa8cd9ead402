"""Shipping: addresses, packing an order into parcels, carriers and shipments."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import NamedTuple

from shopkit.catalog import Catalog, Sku
from shopkit.money import Money, make_money
from shopkit.orders import Order, OrderId

MAX_PARCEL_GRAMS = 20_000


class Address(NamedTuple):
    street: str
    city: str
    postcode: str
    country: str = "GB"

    def one_line(self) -> str:
        return ", ".join(part for part in self if part)


class Carrier(Enum):
    ROYAL_MAIL = "royal-mail"
    DPD = "dpd"
    FREIGHT = "freight"


@dataclass
class Parcel:
    skus: list[Sku] = field(default_factory=list)
    weight_grams: int = 0

    def fits(self, grams: int, limit: int = MAX_PARCEL_GRAMS) -> bool:
        return self.weight_grams + grams <= limit


@dataclass
class Shipment:
    order_id: OrderId
    address: Address
    carrier: Carrier
    parcels: list[Parcel]
    shipped_at: datetime | None = None

    def weight(self) -> int:
        return sum(parcel.weight_grams for parcel in self.parcels)

    def mark_shipped(self, at: datetime) -> Shipment:
        self.shipped_at = at
        return self


def pack(
    order: Order, catalog: Catalog, limit: int = MAX_PARCEL_GRAMS
) -> Generator[Parcel, None, None]:
    """Fill parcels greedily, line by line; a single heavy item still gets its own parcel."""
    current = Parcel()
    for line in order.lines:
        product = catalog.get(line.sku)
        grams = product.weight_grams if product else 0
        for _ in range(line.quantity):
            if current.skus and not current.fits(grams, limit):
                yield current
                current = Parcel()
            current.skus.append(line.sku)
            current.weight_grams += grams
    if current.skus:
        yield current


def choose_carrier(weight_grams: int, address: Address) -> Carrier:
    if weight_grams > 30_000:
        return Carrier.FREIGHT
    if address.country != "GB":
        return Carrier.DPD
    return Carrier.ROYAL_MAIL


def quote(weight_grams: int, address: Address) -> tuple[Carrier, Money]:
    carrier = choose_carrier(weight_grams, address)
    per_kg = {Carrier.ROYAL_MAIL: "1.10", Carrier.DPD: "2.40", Carrier.FREIGHT: "0.90"}[carrier]
    kilos = max(weight_grams // 1000, 1)
    return carrier, make_money(per_kg).times(kilos)


def ship(order: Order, address: Address, catalog: Catalog) -> Shipment:
    parcels = list(pack(order, catalog))
    weight = sum(parcel.weight_grams for parcel in parcels)
    return Shipment(order.id, address, choose_carrier(weight, address), parcels)


def tracking_events(shipment: Shipment) -> Iterator[tuple[datetime, str]]:
    """The events a customer sees; estimated from the carrier until a real feed exists."""
    if shipment.shipped_at is None:
        return
    yield shipment.shipped_at, "Handed to carrier"
    days = 1 if shipment.carrier is Carrier.ROYAL_MAIL else 2
    yield shipment.shipped_at + timedelta(days=days), "Out for delivery"


def label_text(shipment: Shipment) -> str:
    lines = [shipment.address.street, shipment.address.city, shipment.address.postcode]
    return "\n".join([*lines, shipment.address.country, shipment.order_id])


def parse_address(text: str) -> Address:
    street, city, postcode, *rest = [part.strip() for part in text.split(",")]
    return Address(street, city, postcode, rest[0] if rest else "GB")


WAREHOUSE = Address("1 Dock Road", "Leeds", "LS1 4AP")


def return_shipment(shipment: Shipment) -> Shipment:
    """A shipment that brings a parcel back to the warehouse with the same carrier."""
    back: tuple[Address, Carrier] = (WAREHOUSE, shipment.carrier)
    return Shipment(shipment.order_id, back[0], back[1], [Parcel()])


def route_for(shipment):
    """Legacy routing: the carrier code as the sorting office spells it."""
    return shipment.carrier.value.upper()
