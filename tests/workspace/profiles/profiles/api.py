"""The JSON API's view of profiles."""

from profiles.models import Profile


def profile_payload(profile: Profile) -> dict:
    """The profile as a plain dict for the JSON response, None fields left out."""
    raise NotImplementedError
