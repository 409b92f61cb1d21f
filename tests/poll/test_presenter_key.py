"""The presenter key: where it comes from, the generated one shared by the machine's processes, the comparison."""

from __future__ import annotations

import hmac
import stat

import pytest

from poll import PresenterKey, PresenterKeySetupError, presenter_key
from poll.presenter_key import KEY_FILE_NAME, PRESENTER_KEY_ENV

CONFIGURED = "correct-horse-battery-staple"


def test_the_secrets_value_comes_first_then_the_environment(tmp_path):
    env = {PRESENTER_KEY_ENV: "from-the-environment-1234"}
    assert presenter_key(CONFIGURED, tmp_path, env) == PresenterKey(CONFIGURED, "secrets")
    assert presenter_key(None, tmp_path, env) == PresenterKey("from-the-environment-1234", "environment")
    assert presenter_key("", tmp_path, env).source == "environment"
    assert not (tmp_path / KEY_FILE_NAME).exists()


@pytest.mark.parametrize("short", ["abc", "fifteen-chars-x", "   padded   "])
def test_a_short_configured_key_is_refused(tmp_path, short):
    with pytest.raises(PresenterKeySetupError, match="shorter than 16"):
        presenter_key(short, tmp_path, {})
    with pytest.raises(PresenterKeySetupError, match="environment"):
        presenter_key(None, tmp_path, {PRESENTER_KEY_ENV: short})


def test_without_configuration_a_key_is_generated_once_into_a_private_file(tmp_path):
    data = tmp_path / "data"
    made = presenter_key(None, data, {})
    assert made.source == "generated" and made.generated_now and len(made.value) >= 40
    assert stat.S_IMODE((data / KEY_FILE_NAME).stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    again = presenter_key(None, data, {})
    assert again.value == made.value and not again.generated_now
    assert presenter_key(None, tmp_path / "other", {}).value != made.value


def _key_in_new_process(data_dir: str, queue) -> None:
    queue.put(presenter_key(None, data_dir, {}).value)


def test_processes_starting_together_agree_on_one_generated_key(tmp_path, spawn_context):
    context = spawn_context
    queue = context.Queue()
    processes = [context.Process(target=_key_in_new_process, args=(str(tmp_path), queue)) for _ in range(4)]
    for process in processes:
        process.start()
    keys = {queue.get(timeout=60) for _ in processes}
    for process in processes:
        process.join(timeout=60)
    assert keys == {presenter_key(None, tmp_path, {}).value}
    assert [p.name for p in tmp_path.iterdir()] == [KEY_FILE_NAME]  # no temporary file left behind


def test_a_key_file_others_can_read_is_refused(tmp_path):
    presenter_key(None, tmp_path, {})
    (tmp_path / KEY_FILE_NAME).chmod(0o644)
    with pytest.raises(PresenterKeySetupError, match="chmod 600"):
        presenter_key(None, tmp_path, {})


def test_an_empty_key_file_is_refused(tmp_path):
    (tmp_path / KEY_FILE_NAME).touch(mode=0o600)
    with pytest.raises(PresenterKeySetupError, match="no usable key"):
        presenter_key(None, tmp_path, {})


def test_an_unusable_data_directory_is_a_setup_error(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(PresenterKeySetupError, match="cannot be used"):
        presenter_key(None, tmp_path / "a-file" / "data", {})


def test_the_key_is_compared_in_constant_time_and_never_shown(monkeypatch):
    key = PresenterKey(CONFIGURED, "secrets")
    compared = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    assert key.matches(CONFIGURED) and not key.matches(CONFIGURED[:-1] + "X") and not key.matches("")
    assert len(compared) == 3
    assert not key.matches(None) and not key.matches("\udcff")
    assert CONFIGURED not in repr(key)


def test_a_process_that_loses_the_race_keeps_the_winners_key(tmp_path):
    """Two processes both found no key file and both write one: the second link fails, the first key stays."""
    from poll.presenter_key import _write_new_key

    path = tmp_path / KEY_FILE_NAME
    first = _write_new_key(path)
    assert first is not None and _write_new_key(path) is None
    assert path.read_text().strip() == first and [p.name for p in tmp_path.iterdir()] == [KEY_FILE_NAME]
