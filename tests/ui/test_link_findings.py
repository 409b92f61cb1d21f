"""Links the sweep (`tests/ui/test_link_sweep.py`) found wrong, kept as ordinary regression tests.

A select slider's option written by hand as another equal number (``1.50``, ``+32``, ``5.000000e-01``) was read,
then dropped from the address, so the next link copied lost it: the address must keep it, in the option's own
form.
"""

from __future__ import annotations

import pytest

from decoder.config import DecoderConfig
from decoder.trainer import DecoderTrainer
from ui.shared_runs import shared_runs

from tests.helpers.apptest import run_page, share_link
from tests.pages.test_decoder import SHORT, open_page
from tests.ui.test_url_state import link_notices

#: ``(page, key, as written by hand, as the page writes it, the widget's value)``, each found by the sweep.
HAND_WRITTEN = [
    ("soft_lookup", "temp", "5.000000e-01", "0.5", 0.5),
    ("scaled_attention", "d_k", "+32", "32", 32),
    ("training", "heads", "4.000000e+00", "4", 4),
    ("cross_attention", "d_model", "32.0", "32", 32),
    ("decoder", "top_p", "0.50", "0.5", 0.5),
    ("decoder", "temp", "1.50", "1.5", 1.5),
]


def train_decoder_run() -> None:
    """The decoder's short run, trained through its page once for the server (its sampling knobs need a run)."""
    if shared_runs("decoder", DecoderTrainer, 8).existing(DecoderConfig(steps=int(SHORT["steps"]))) is None:
        open_page(**SHORT).button(key="train").click().run()


@pytest.mark.parametrize(("page", "key", "typed", "written", "value"), HAND_WRITTEN,
                         ids=[f"{p}-{k}={t}" for p, k, t, _, _ in HAND_WRITTEN])
def test_a_hand_written_equal_number_stays_in_the_address_in_the_option_s_own_form(page, key, typed, written, value):
    base = {}
    if page == "decoder":  # its sampling knobs are drawn once a run is trained
        train_decoder_run()
        base = SHORT
    at = run_page(f"app_pages/{page}.py", **base, **{key: typed})
    assert not at.exception
    assert at.select_slider(key=key).value == value and not link_notices(at)
    assert at.query_params.get(key) == written, at.query_params
    assert f"{key}={written}" in share_link(at)
    again = run_page(f"app_pages/{page}.py", **at.query_params)  # the address written back, opened
    assert again.select_slider(key=key).value == value and again.query_params == at.query_params


def test_the_option_s_own_form_equal_to_the_default_leaves_the_address_clean():
    at = run_page("app_pages/soft_lookup.py", temp="0.20")
    assert at.select_slider(key="temp").value == 0.2 and "temp" not in at.query_params and not link_notices(at)


def test_a_value_dropped_before_a_hand_written_one_is_rewritten_is_still_named_by_the_notice():
    """The run that rewrites `d_k=+32` starts from an address the run before already cleared of `seq_len=33`."""
    at = run_page("app_pages/scaled_attention.py", seq_len="33", d_k="+32", present="yes")
    assert at.select_slider(key="d_k").value == 32 and at.query_params.get("d_k") == "32"
    assert set(link_notices(at)) == {"seq_len", "present"}, link_notices(at)
