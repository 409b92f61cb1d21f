"""What this machine has installed, as the app's messages name it."""

from __future__ import annotations


def cuda_build_installed() -> bool:
    """Whether the installed PyTorch is a CUDA build (PyPI's, where PyTorch's CPU index was out of reach)."""
    import torch

    return torch.version.cuda is not None


def installed_build_words() -> str:
    """How the start-up line names the installed PyTorch build: "a CPU build" where PyTorch's CPU index (or the
    local copy of its wheel) served it, "a CUDA … build" where pip took PyPI's (e.g. Python 3.12 and 3.13 here)."""
    import torch

    return "a CPU build" if torch.version.cuda is None else f"a CUDA {torch.version.cuda} build"
