"""Positional encoding: the sine/cosine table, its waves, and why nearby positions look alike."""

from __future__ import annotations

import streamlit as st

from core import positional_encoding
from core.positional_analysis import (
    EncodingTable,
    SampledWaves,
    angular_frequencies,
    encoding_table,
    position_similarity,
    sampled_waves,
    similarity_at_offset,
    wavelengths,
)
from ui.cache import shared_cache
from ui.chart_names import ChartName, matrix_name
from ui.charts import positional_encoding as charts
from ui.display import matrix_downloads, show_chart
from ui.export import matrix_titles
from ui.layout import controls_row, fixed_slot, introduction, page_fragment, section, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.url_state import bound_multiselect, bound_slider
from ui.wording.positional_encoding import columns, offset_only, similarity_trend, speeds, wavelength_range

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {"positions": "512", "d_model": "512"}

DEFAULT_DIMS = (0, 1, 2, 4)
MAX_DIMS = 8


@shared_cache(64)
def table_at(positions: int, d_model: int) -> EncodingTable:
    """The encoding table and its similarities, computed once per size."""
    return encoding_table(positions, d_model)


@shared_cache(64)
def waves_at(positions: int, d_model: int, dims: tuple[int, ...]) -> SampledWaves:
    """The chosen dimensions' waves, sampled once per setting."""
    return sampled_waves(positions, d_model, dims)


# The charts, built once per setting (the cache key); the underscored argument is that setting's result.
@shared_cache(64)
def table_spec(positions: int, d_model: int, _table: EncodingTable) -> tuple[dict, bool]:
    return charts.table_spec(_table)


@shared_cache(64)
def waves_spec(positions: int, d_model: int, dims: tuple[int, ...], _waves: SampledWaves) -> dict:
    return charts.waves_spec(_waves)


@shared_cache(64)
def similarity_spec(positions: int, d_model: int, _table: EncodingTable) -> dict:
    return charts.similarity_spec(_table)


introduction(
    "Positional encoding",
    "Attention compares contents only, so on its own it cannot tell the first word from the last. "
    "The original Transformer fixes this by adding a fixed vector to each token's embedding, one per "
    "position, built from the sines and cosines of the formula below: each dimension is a wave of the position, "
    "at a speed set by its index and by the width d_model. Nothing here is learned.",
    r"PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{model}}}\right),\qquad "
    r"PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{model}}}\right)",
    keep_text=True,
)


@page_fragment
def waves_section(positions: int, d_model: int) -> None:
    """Section 2, the waves: a fragment nested in the page's, so picking dimensions reruns only this section."""
    section(
        "2 · Waves of different lengths",
        "Each column of the table samples one wave at the integer positions. Dimensions 2i and 2i + 1 share "
        "the frequency ω_i, so they repeat every λ_i positions. " + wavelength_range(d_model),
        r"\omega_i = \frac{1}{10000^{2i/d_{model}}},\qquad \lambda_i = \frac{2\pi}{\omega_i}"
        r" = 2\pi \cdot 10000^{2i/d_{model}}",
        keep_text=True,
    )
    default_dims = [d for d in DEFAULT_DIMS if d < d_model]
    dims = sorted(int(d) for d in bound_multiselect(
        "Dimensions to draw", "dims", range(d_model), default_dims, max_selections=MAX_DIMS,
        help=f"Pick up to {MAX_DIMS} dimensions (0 to d_model − 1); each curve is labelled with its wavelength λ.",
    ))
    with fixed_slot():
        if not dims:
            st.info("Pick at least one dimension above to draw its wave.")
        else:
            waves = waves_at(positions, d_model, tuple(dims))
            lam = waves.wavelengths
            dots = positions <= charts.MAX_DOTS
            show_chart(
                waves_spec(positions, d_model, tuple(dims), waves),
                alt=ChartName(f"Sine and cosine curves of the chosen dimensions over {positions} positions, and the "
                              f"wavelength of every one of the {d_model} dimensions",
                              f"Dimensions shown: {', '.join(map(str, dims))}. Wavelengths from {lam.min():,.2f} to "
                              f"{lam.max():,.2f} positions."),
            )
            omega = angular_frequencies(d_model)
            st.caption(
                ("Dots: the values in the table. " if dots else "")
                + "Frequencies: " + ", ".join(f"ω of dim {d} = {omega[d]:.4g}" for d in dims)
                + f". Shortest wavelength {lam.min():.2f}, longest {lam.max():,.2f} positions."
            )


@page_fragment
def page_body() -> None:
    with controls_row():
        positions = int(bound_slider("Positions T", "positions", 1, 512, 5,
                                     help="Number of positions (rows of the table), 1 to 512."))
        d_model = int(bound_slider("d_model", "d_model", 1, 512, 8,
                                   help="Embedding width (columns of the table). Odd widths end on a sine."))
    table = table_at(positions, d_model)
    st.markdown(speeds(table))
    table_section(table, positions, d_model)
    waves_section(positions, d_model)
    offer_notebook("positional_encoding", positions=positions, d_model=d_model, dims=st.session_state.get("dims", []))
    similarity_section(table, positions, d_model)
    nearby_positions_quiz(table, positions, d_model)
    show_source(positional_encoding, wavelengths, position_similarity, similarity_at_offset)


def table_section(table: EncodingTable, positions: int, d_model: int) -> None:
    """Section 1: the encoding table, one row per position (its numbers offered as files when drawn as an image)."""
    pe = table.pe
    section(
        "1 · The encoding table",
        "One row per position, one column per dimension: this whole row is added to the embedding of "
        "the token at that position. " + columns(d_model),
        keep_text=True,
    )
    pe_chart, pe_is_image = table_spec(positions, d_model, table)
    show_chart(pe_chart, alt=matrix_name("Heatmap of the positional-encoding table", pe, "positions", "dimensions"))
    n_distinct = table.distinct
    st.caption(f"Distinct rows: {n_distinct} of {positions}"
               + (": every position gets its own vector." if n_distinct == positions else ".")
               + (" These 5 positions × 8 dimensions are the table the lesson prints, to its 3 decimals."
                  if (positions, d_model) == (5, 8) else ""))
    with fixed_slot():
        if pe_is_image:
            st.caption(f"{pe.size:,} cells drawn as one image, one pixel per cell (no hover values at this size; "
                       f"tooltips return below {charts.MAX_RECT_CELLS:,} cells). "
                       "The numbers, for slides or a notebook:")
            matrix_downloads("PE table", pe, [str(p) for p in range(positions)], [str(d) for d in range(d_model)])


def similarity_section(table: EncodingTable, positions: int, d_model: int) -> None:
    """Section 3: the dot product of every pair of positions, which depends only on their offset."""
    sim = table.similarity
    section(
        "3 · How alike two positions are",
        offset_only(d_model) + " " + similarity_trend(table),
        r"PE_p \cdot PE_{p+k} = \sum_i \cos(\omega_i\, k)\quad\text{(every full sine/cosine pair)}",
        keep_text=True,
    )
    similarity_chart = similarity_spec(positions, d_model, table)
    pairs = matrix_name("Heatmap of the dot product between every pair of positions", sim, "positions", "positions")
    show_chart(similarity_chart, alt=ChartName(pairs.alt + ", and the dot product against the offset", pairs.numbers))
    with fixed_slot():
        if not matrix_titles(similarity_chart):  # drawn as one image: its numbers are not in the chart's Export menu
            labels = [str(p) for p in range(positions)]
            matrix_downloads("PE · PEᵀ", sim, labels, labels)
    c1, c2 = st.columns(2)
    c1.metric("max gap to the offset-only formula", f"{table.offset_error:.1e}",
              help="Largest gap, over every pair of positions, between the dot product and the offset-only formula.")
    c2.metric("PE_p · PE_p (squared length)", f"{sim[0, 0]:.3f}",
              help="The diagonal: d_model / 2 for an even width (each pair contributes sin² + cos² = 1).")
    st.caption("Odd d_model: the last, unpaired sine adds sin(ωp)·sin(ω(p+k)), which depends on p, "
               "so the gap above is not just rounding." if d_model % 2 else
               "Even d_model: every sine has its cosine, so the gap above is rounding error only.")


def nearby_positions_quiz(table: EncodingTable, positions: int, d_model: int) -> None:
    """Which of positions 11 and 40 is closer to position 10 (when the table has 41 positions or more)."""
    sim = table.similarity
    with fixed_slot():
        if positions >= 41:
            near, far = float(sim[10, 11]), float(sim[10, 40])
            predict_then_reveal(
                f"With d_model = {d_model}: which position's encoding has the larger dot product with position 10's?",
                ["position 11", "position 40"], "position 11" if near > far else "position 40",
                f"PE₁₀ · PE₁₁ = {near:.3f} and PE₁₀ · PE₄₀ = {far:.3f}. "
                + ("Most dimensions vary slowly, so neighbouring positions get similar vectors."
                   if near > far else f"With d_model = {d_model} the few fast waves outweigh the slow ones, and a "
                   "far position can come out more alike than a neighbour."),
                key="pe_similarity",
            )


page_body()
