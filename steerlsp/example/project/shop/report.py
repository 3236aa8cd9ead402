"""Reports over carts. This file has deliberate lint and formatting problems."""

from shop.cart import Cart
from shop.pricing import discount


def summary(cart: Cart) -> str:
    total = cart.total()
    return "🛒 " + total.format() + missing_name


def  badly_formatted( x,y ):
    return x+y
