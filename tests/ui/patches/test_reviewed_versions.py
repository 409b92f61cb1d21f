"""Upgrading a pinned library is a review of the patches: requirements.txt's pins must be the versions
`ui.patches` records as reviewed, and every patch must be written for its library's pin."""

from __future__ import annotations

import pytest

from tests.test_requirements import requirements
from ui.patches import PATCHES, REVIEWED

#: The libraries the patches or the code around them lean on: a new version of any is reviewed before it is pinned.
MUST_BE_REVIEWED = {"altair", "streamlit", "pandas", "pyarrow", "numpy"}


def pins() -> dict[str, str]:
    """requirements.txt's exact pins, by distribution name."""
    return {r.name: str(r.specifier).removeprefix("==") for r in requirements("requirements.txt")}


@pytest.mark.parametrize("library", sorted(MUST_BE_REVIEWED | set(REVIEWED)))
def test_the_pinned_version_is_the_reviewed_one(library):
    assert library in REVIEWED, f"{library} is not in ui.patches.REVIEWED"
    assert pins()[library] == REVIEWED[library], (
        f"requirements.txt pins {library} {pins()[library]}, the patches were reviewed against "
        f"{REVIEWED[library]}: review ui/patches/ (each patch's target and its tests), then update REVIEWED and the "
        f"patches' versions")


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_every_patch_is_written_for_its_librarys_pin(patch):
    assert patch.version == REVIEWED[patch.library] == pins()[patch.library]
