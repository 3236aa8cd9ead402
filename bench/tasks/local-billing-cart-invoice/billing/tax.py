"""Which tax band a product category falls in."""

from billing.items import TaxBand

CATEGORY_BANDS: dict[str, TaxBand] = {
    "books": TaxBand.ZERO_RATED,
    "childrenswear": TaxBand.ZERO_RATED,
    "food": TaxBand.REDUCED_5,
    "energy": TaxBand.REDUCED_5,
}


def band_for(category: str) -> TaxBand:
    """The band for a product category; anything not listed is standard-rated."""
    return CATEGORY_BANDS.get(category.strip().lower(), TaxBand.STANDARD_20)
