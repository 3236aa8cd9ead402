"""The product catalogue: products, their category tree, and loading both from CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from shopkit.money import Currency, Money, make_money

Sku = str


@dataclass
class Category:
    """A node of the category tree; the root's slug is "" and it is never shown."""

    name: str
    slug: str
    children: list[Category] = field(default_factory=list)
    parent_slug: str | None = None

    def add(self, child: Category) -> Category:
        child.parent_slug = self.slug
        self.children.append(child)
        return child

    def walk(self) -> Iterator[Category]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, slug: str) -> Category | None:
        for category in self.walk():
            if category.slug == slug:
                return category
        return None

    def depth_of(self, slug: str) -> int:
        found = self.find(slug)
        depth = 0
        while found is not None and found.parent_slug:
            depth += 1
            found = self.find(found.parent_slug)
        return depth


@dataclass
class Product:
    sku: Sku
    name: str
    price: Money
    category: Category
    weight_grams: int = 0
    tags: frozenset[str] = frozenset()

    def label(self) -> str:
        return f"{self.name} ({self.sku}) {self.price.format()}"

    def with_price(self, price: Money) -> Product:
        return Product(self.sku, self.name, price, self.category, self.weight_grams, self.tags)


class ProductRow(NamedTuple):
    """One line of the catalogue CSV, as text."""

    sku: Sku
    name: str
    price: str
    category: str
    weight_grams: int


class Catalog:
    """All products by SKU, with the category tree they hang from."""

    products: dict[Sku, Product]
    root: Category

    def __init__(self, root: Category) -> None:
        self.root = root
        self.products = {}

    def add(self, product: Product) -> Product:
        if product.sku in self.products:
            raise KeyError(f"duplicate SKU {product.sku}")
        self.products[product.sku] = product
        return product

    def get(self, sku: Sku) -> Product | None:
        return self.products.get(normalise_sku(sku))

    def in_category(self, slug: str) -> Iterator[Product]:
        """Products of a category and of all its descendants."""
        top = self.root.find(slug)
        if top is None:
            return
        wanted = {category.slug for category in top.walk()}
        for product in self.products.values():
            if product.category.slug in wanted:
                yield product

    def skus(self) -> list[Sku]:
        return sorted(self.products)

    def cheapest(self) -> Product | None:
        return min(self.products.values(), key=lambda p: p.price.amount, default=None)


def normalise_sku(raw: str) -> Sku:
    """SKUs are compared upper-case and without spaces: "ab 12" and "AB12" are one product."""
    return raw.replace(" ", "").upper()


def category_tree(spec: dict[str, list[str]]) -> Category:
    """A two-level tree from {"Kitchen": ["Knives", "Pans"], ...}."""
    root = Category(name="All", slug="")
    for parent_name, child_names in spec.items():
        parent = root.add(Category(parent_name, slugify(parent_name)))
        for child_name in child_names:
            parent.add(Category(child_name, slugify(child_name)))
    return root


def slugify(name: str) -> str:
    return "-".join(name.lower().split())


def read_rows(path: Path) -> Iterator[ProductRow]:
    with path.open(newline="", encoding="utf-8") as handle:
        for record in csv.DictReader(handle):
            yield ProductRow(
                sku=normalise_sku(record["sku"]),
                name=record["name"].strip(),
                price=record["price"],
                category=record["category"],
                weight_grams=int(record.get("weight_grams") or 0),
            )


def product_from_row(row: ProductRow, root: Category, currency: Currency = Currency.EUR) -> Product:
    category = root.find(row.category) or root
    price: Money = make_money(row.price, currency)
    return Product(row.sku, row.name, price, category, row.weight_grams)


def load_catalog(path: Path, root: Category) -> Catalog:
    catalog = Catalog(root)
    for row in read_rows(path):
        catalog.add(product_from_row(row, root))
    return catalog


def price_index(catalog: Catalog) -> dict[Sku, Money]:
    prices: dict[Sku, Money] = {}
    for sku, product in catalog.products.items():
        prices[sku] = product.price
    return prices
