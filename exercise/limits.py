"""The sandbox's limits on one check, in one place: the worker applies them, the messages quote them; and the
setting that switches code execution off (read by the page and the server's start-up without importing PyTorch)."""

from __future__ import annotations

from exercise.numbers import message_template, number

DEFAULT_TIMEOUT_S = 5.0
#: Address space the student's code may use on top of what Python + PyTorch already mapped. The lesson's tensors
#: need a few kilobytes; the budget is what keeps `DEFAULT_PARALLEL` children at their worst inside Community Cloud's
#: limit (`CLOUD_LIMIT_BYTES`, a test checks the sum).
MEMORY_BUDGET_BYTES = 256 << 20
#: Streamlit Community Cloud's memory for an app's whole container (server, checker's worker, its children):
#: guaranteed, and at most.
CLOUD_GUARANTEED_BYTES = 690_000_000
CLOUD_LIMIT_BYTES = 2_700_000_000
#: The server and the checker's warm worker together under a class of 60 pressing "Check my code", with room to
#: spare above what `python -m benchmarks.memory` measured (figures in docs/performance.md).
SERVER_AND_WORKER_BYTES = 1_200_000_000
#: Kept free under `CLOUD_LIMIT_BYTES` with every child at its worst.
CLOUD_MARGIN_BYTES = 500_000_000
FILE_SIZE_BYTES = 1 << 20
OPEN_FILES = 64
#: What is kept of the student's stdout and of stderr (the rest is read and thrown away).
OUTPUT_CAP_BYTES = 4096
RESULT_CAP_BYTES = 4 << 20
MAX_SOURCE_CHARS = 50_000


@message_template
def bytes_in_words(n: int) -> str:
    """A byte count in words: ``1 MB``, ``4 KB``."""
    return f"{number(n / 2**20)} MB" if n >= 2**20 else f"{number(n / 2**10)} KB"


#: Set to 1/true/yes/on in the environment (or as a secret) to switch code execution off on this server.
DISABLE_SETTING = "ATTENTION_DISABLE_EXEC"
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


def switched_off(value: object) -> bool:
    """Whether a value of `DISABLE_SETTING` (from the environment or a secret) switches execution off."""
    return value is not None and str(value).strip().lower() in TRUE_WORDS
