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
