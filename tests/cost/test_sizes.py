"""`cost.sizes`: the attention weights' bytes at real context lengths, computed."""

import pytest

from cost.sizes import MODEL_SHAPES, context_table, format_bytes, weight_matrix_bytes


def test_weight_matrix_bytes():
    assert weight_matrix_bytes(512) == 512 * 512 * 4
    assert weight_matrix_bytes(131_072, 2) == 32 * 2**30
    with pytest.raises(ValueError, match="n must be a positive integer"):
        weight_matrix_bytes(0)


def test_context_table():
    rows = context_table([512, 2048], n_layers=6, n_heads=12)
    assert len(rows) == 4 and [r["dtype"] for r in rows] == ["float16", "float32"] * 2
    r = rows[1]  # 512, float32
    assert r["entries per head"] == 512**2 and r["per head"] == 512**2 * 4
    assert r["per layer"] == 12 * r["per head"] and r["all layers"] == 6 * r["per layer"]
    assert rows[2]["per head"] == 16 * rows[0]["per head"]  # 4x the length, 16x the memory
    assert all(len(shape) == 2 for shape in MODEL_SHAPES.values())
    with pytest.raises(ValueError, match="n_heads"):
        context_table([512], 6, 0)


def test_format_bytes():
    assert format_bytes(100) == "100 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(512**2 * 2) == "512 KiB"
    assert format_bytes(2**35) == "32 GiB"
    assert format_bytes(2**52) == "4,096 TiB"
