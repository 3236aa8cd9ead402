"""A small example project: a shop with a cart and pricing rules."""
