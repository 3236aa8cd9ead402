"""The half-written checkout.py the ChatLSP tests open in a copy of the example project:
the cursor at ``return `` in a function that must return a ``Price``."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.session import start


def copy_shop(tmp_path: Path, shop: Path) -> Path:
    """A copy of the example project (its ``shop`` package inside) to edit."""
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    return root


CHECKOUT = (
    '"""Checkout. 🛒"""\n'
    "\n"
    "from shop.cart import Cart, export_path\n"
    "from shop.pricing import Price, discount\n"
    "\n"
    "\n"
    "def checkout_total(cart: Cart, percent: float) -> Price:\n"
    '    """The cart\'s total after the discount."""\n'
    "    label = '🛒'\n"
    "    return "
)
HOLE = {"line": 9, "character": 11}


async def opened(start_raw, project: Path, text: str = CHECKOUT, **kwargs):
    client = await start(start_raw, project, **kwargs)
    uri = (project / "shop" / "checkout.py").as_uri()
    client.open(uri, text)
    return client, uri


def at(uri: str, position: dict, **extra) -> dict:
    return {"textDocument": {"uri": uri}, "position": position, **extra}
