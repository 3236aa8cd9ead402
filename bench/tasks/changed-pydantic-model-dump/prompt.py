"""Serialize user profiles for the public API."""

from datetime import date
from typing import Optional

from pydantic import BaseModel, Field


class Address(BaseModel):
    city: str
    postcode: Optional[str] = None


class Profile(BaseModel):
    user_id: int
    display_name: str = Field(alias="displayName")
    birthday: Optional[date] = None
    address: Optional[Address] = None
    tags: list[str] = []


def profile_to_payload(profile: Profile) -> dict:
    """Convert ``profile`` into a plain dict for the API response.

    Keys use the field aliases (``displayName``), fields whose value is None
    are left out (also inside the nested address), and the nested address
    becomes a plain dict. Values keep their Python types (``birthday`` stays
    a ``datetime.date``).
    """
    