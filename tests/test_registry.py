"""Every page of the router declares what the shared tests need to know of it, in its own test module.

The shared tests collect the pages' declarations (`tests.helpers.registry`) and leave out a page that has none, so
that they still run; this file is where such a page fails, by name, with what to add and where.
"""

from __future__ import annotations

import types

import pytest

from devtools.appserver import router_pages
from tests.helpers.registry import (
    SHARED,
    Case,
    PageTests,
    RegistrationError,
    declaration,
    declarations,
    own_test_module,
    read_declaration,
)

pytestmark = pytest.mark.router_wide  # every page at once: docs/adding-a-page.md's quick check selects it


@pytest.mark.parametrize("page", [p.name for p in router_pages()])
def test_every_page_declares_what_the_shared_tests_need(page):
    try:
        shared = declaration(page)
    except RegistrationError as missing:
        pytest.fail(str(missing))
    assert shared.valid and shared.malformed, f"{own_test_module(page)}: every page has a key, the router's `present`"


def test_the_shared_tests_see_every_declaration_in_the_routers_order():
    assert list(declarations()) == [p.name for p in router_pages()]


def test_a_missing_or_foreign_declaration_says_what_to_add_and_where():
    module = types.ModuleType("tests.pages.test_new_page")
    expected = r"new_page: tests/pages/test_new_page.py declares no `SHARED = PageTests\(...\)`. Add one at the end of"
    with pytest.raises(RegistrationError, match=expected):
        read_declaration("new_page", module)
    setattr(module, SHARED, PageTests(probe=declaration("exercise").probe,
                                      valid=[Case("exercise", {"present": "true"})], malformed=[]))
    with pytest.raises(RegistrationError, match=r"declares cases for other pages \(\['exercise'\]\)"):
        read_declaration("new_page", module)
    with pytest.raises(RegistrationError, match=r"no tests/pages/test_no_such_page.py. Create it"):
        declaration("no_such_page")
