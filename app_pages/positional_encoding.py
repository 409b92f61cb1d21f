"""Positional encoding: the sine/cosine table, its waves, and why nearby positions look alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import positional_encoding
from core.positional_analysis import (
    angular_frequencies,
    distinct_positions,
    offset_invariance_error,
    position_similarity,
    positional_encoding_at,
    similarity_at_offset,
    wavelengths,
)
from ui.charts import heatmap, line_chart, side_by_side, to_spec
from ui.display import matrix_downloads, show_chart
from ui.export import matrix_titles
from ui.layout import fixed_slot, page_fragment, section, show_source
from ui.positional_charts import (
    default_domain,
    raster_heatmap,
    raster_image_uri,
    wave_chart,
    wavelength_chart,
    with_legend_length,
)
from ui.quiz import predict_then_reveal
from ui.url_state import bound_multiselect, bound_slider

#: Draw a matrix as rect marks (with tooltips) up to this many cells; above it, as one image.
MAX_RECT_CELLS = 2500
#: Smallest rect cell (px) before switching to the image; cells print their values from `LABEL_CELL` px.
MIN_CELL, LABEL_CELL, MAX_CELL = 8, 46, 58
#: Width in px a heatmap aims for.
TARGET_PX = 620
DEFAULT_DIMS = (0, 1, 2, 4)
MAX_DIMS = 8
MAX_DOTS = 64  # draw the table's values as dots on the curves up to this many positions


@st.cache_data(max_entries=16, show_spinner=False)
def encoding_and_similarity(positions: int, d_model: int) -> tuple[np.ndarray, np.ndarray, float]:
    pe = positional_encoding(positions, d_model)
    return pe, position_similarity(pe), offset_invariance_error(pe)


@st.cache_data(max_entries=16, show_spinner=False)
def image_of(kind: str, positions: int, d_model: int) -> str:
    pe, sim, _ = encoding_and_similarity(positions, d_model)
    return raster_image_uri(pe if kind == "pe" else sim, signed=True)


@st.cache_data(max_entries=32, show_spinner=False)
def wave_frames(positions: int, d_model: int, dims: tuple[int, ...]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Smooth curves and table samples of the chosen dims, labelled with their wavelength."""
    lam = wavelengths(d_model)
    names = [f"dim {d} · {'sin' if d % 2 == 0 else 'cos'} · λ = {lam[d]:,.2f}" for d in dims]
    span = max(positions - 1, 1)
    p = np.linspace(0.0, span, min(8 * span, 2048) + 1)  # >= 25 samples per period of the fastest wave
    smooth = positional_encoding_at(p, d_model, dims)  # (P, n_dims)
    curves = pd.DataFrame({"position": np.tile(p, len(dims)), "value": smooth.T.ravel(),
                           "series": np.repeat(names, len(p))})
    ints = np.arange(positions, dtype=np.float64)
    table = positional_encoding_at(ints, d_model, dims)  # (T, n_dims)
    samples = pd.DataFrame({"position": np.tile(ints, len(dims)), "value": table.T.ravel(),
                            "series": np.repeat(names, positions)})
    return curves, samples, names


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def matrix_chart(kind: str, matrix: np.ndarray, positions: int, d_model: int, target_px: int = TARGET_PX,
                 **kw) -> tuple[object, bool]:
    """Rect heatmap (tooltips, values in small cells) when it fits, else one image; returns (chart, is_image)."""
    n_rows, n_cols = matrix.shape
    cell = min(MAX_CELL, target_px // max(n_rows, n_cols))
    if matrix.size <= MAX_RECT_CELLS and cell >= MIN_CELL:
        show = matrix.size <= 400 and cell >= LABEL_CELL
        chart = heatmap(matrix, cell_size=cell, show_values=show, **kw)
        return with_legend_length(chart, max(60, min(240, cell * n_rows - 20))), False
    kw = {k: v for k, v in kw.items() if k in ("title", "x_title", "y_title")}  # an image: redrawn anyway
    chart = raster_heatmap(image_of(kind, positions, d_model), matrix.shape, domain=default_domain(matrix, True),
                           max_size=target_px, **kw)
    return chart, True


# Chart specs, built once per setting: building Altair charts costs far more than the maths.
@st.cache_data(max_entries=64, show_spinner=False)
def table_spec(positions: int, d_model: int) -> tuple[dict, bool]:
    """The encoding table as a Vega-Lite spec, and whether it is drawn as an image."""
    pe, _, _ = encoding_and_similarity(positions, d_model)
    chart, is_image = matrix_chart(
        "pe", pe, positions, d_model, row_labels=[str(p) for p in range(positions)],
        col_labels=[str(d) for d in range(d_model)],
        title=f"PE ({plural(positions, 'position')} × {plural(d_model, 'dim')})", x_title="dimension",
        y_title="position", title_in_data=True)
    return to_spec(chart, canvas=True), is_image


@st.cache_data(max_entries=64, show_spinner=False)
def waves_spec(positions: int, d_model: int, dims: tuple[int, ...]) -> dict:
    """The chosen dimensions' waves beside the wavelength of every dimension."""
    curves, samples, names = wave_frames(positions, d_model, dims)
    lam = wavelengths(d_model)
    ladder = pd.DataFrame({"dimension": np.arange(d_model), "wavelength": lam})
    chosen = pd.DataFrame({"dimension": list(dims), "wavelength": lam[list(dims)], "series": names})
    return to_spec(side_by_side(
        wave_chart(curves, samples if positions <= MAX_DOTS else None, series_order=names,
                   title="PE value against position"),
        wavelength_chart(ladder, chosen, series_order=names, title="wavelength of every dimension"),
    ), canvas=True)


@st.cache_data(max_entries=64, show_spinner=False)
def similarity_spec(positions: int, d_model: int) -> dict:
    """PE · PEᵀ beside the similarity against the offset."""
    _, sim, _ = encoding_and_similarity(positions, d_model)
    labels = [str(p) for p in range(positions)]
    offsets = np.arange(positions)
    offset_df = pd.DataFrame({"offset k": offsets, "PE_0 · PE_k": sim[0],
                              "formula": similarity_at_offset(offsets, d_model)})
    sim_chart, _ = matrix_chart("sim", sim, positions, d_model, row_labels=labels, col_labels=labels,
                                title="PE · PEᵀ (position × position)", x_title="position q", y_title="position p",
                                value_format=".2f", target_px=480)
    return to_spec(side_by_side(
        sim_chart, line_chart(offset_df, x="offset k", y="PE_0 · PE_k", title="similarity against offset",
                              x_title="offset k", y_title="PE_0 · PE_k", points=positions <= MAX_DOTS),
    ), canvas=True)


st.title("Positional encoding")
st.markdown(
    "Attention compares contents only, so on its own it cannot tell the first word from the last. "
    "The original Transformer fixes this by adding a fixed vector to each token's embedding, one per "
    "position, built from sines and cosines. Each pair of dimensions turns at its own speed: the first "
    "pair changes every step, the last barely moves over thousands of steps, so together they give "
    "every position a distinct fingerprint. Nothing here is learned."
)
st.latex(
    r"PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{model}}}\right),\qquad "
    r"PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{model}}}\right)"
)

@page_fragment
def waves_section(positions: int, d_model: int) -> None:
    """Section 2, the waves: a fragment nested in the page's, so picking dimensions reruns only this section."""
    section(
        "2 · Waves of different lengths",
        "Each column of the table samples one wave at the integer positions. Dimensions 2i and 2i + 1 share "
        "the frequency ω_i, so they repeat every λ_i positions; λ grows geometrically with i, from 2π at "
        "the first pair to almost 2π · 10000 at the last.",
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
            lam = wavelengths(d_model)
            dots = positions <= MAX_DOTS
            show_chart(
                waves_spec(positions, d_model, tuple(dims)),
                alt="Sine and cosine curves of the chosen dimensions, and the wavelength of every dimension",
            )
            omega = angular_frequencies(d_model)
            st.caption(
                ("Dots: the values in the table. " if dots else "")
                + "Frequencies: " + ", ".join(f"ω of dim {d} = {omega[d]:.4g}" for d in dims)
                + f". Shortest wavelength {lam.min():.2f}, longest {lam.max():,.2f} positions."
            )


@page_fragment
def live() -> None:
    with st.container(horizontal=True, vertical_alignment="bottom"):
        positions = int(bound_slider("Positions T", "positions", 1, 512, 5,
                                     help="Number of positions (rows of the table), 1 to 512."))
        d_model = int(bound_slider("d_model", "d_model", 1, 512, 8,
                                   help="Embedding width (columns of the table). Odd widths end on a sine."))

    pe, sim, offset_error = encoding_and_similarity(positions, d_model)

    section(
        "1 · The encoding table",
        "One row per position, one column per dimension: this whole row is added to the embedding of "
        "the token at that position. Even columns hold sines, odd columns cosines; read left to right, "
        "the waves get slower.",
        keep_text=True,
    )
    pe_chart, pe_is_image = table_spec(positions, d_model)
    show_chart(pe_chart, alt="Heatmap of the positional-encoding table, position by dimension")
    n_distinct = distinct_positions(pe)
    st.caption(f"Distinct rows: {n_distinct} of {positions}"
               + (": every position gets its own vector." if n_distinct == positions else ".")
               + (" These 5 positions × 8 dimensions are the table the lesson prints, to its 3 decimals."
                  if (positions, d_model) == (5, 8) else ""))
    with fixed_slot():
        if pe_is_image:
            st.caption(f"{pe.size:,} cells drawn as one image, one pixel per cell (no hover values at this size; "
                       f"tooltips return below {MAX_RECT_CELLS:,} cells). The numbers, for slides or a notebook:")
            matrix_downloads("PE table", pe, [str(p) for p in range(positions)], [str(d) for d in range(d_model)])

    waves_section(positions, d_model)

    section(
        "3 · Nearby positions are similar",
        "The dot product of two position vectors is large when the positions are close and falls off with "
        "distance. Each sine/cosine pair is a point on a circle turned by ω_i·p, so the dot product only "
        "depends on the offset k between the positions, not on where they are: attention can read "
        "relative position from it.",
        r"PE_p \cdot PE_{p+k} = \sum_i \cos(\omega_i\, k)\quad\text{(every full sine/cosine pair)}",
        keep_text=True,
    )
    sim_spec = similarity_spec(positions, d_model)
    show_chart(sim_spec, alt="Heatmap of the dot product between every pair of positions, "
                             "and the dot product against the offset")
    with fixed_slot():
        if not matrix_titles(sim_spec):  # drawn as one image: its numbers are not in the chart's Export menu
            labels = [str(p) for p in range(positions)]
            matrix_downloads("PE · PEᵀ", sim, labels, labels)
    c1, c2 = st.columns(2)
    c1.metric("max gap to the offset-only formula", f"{offset_error:.1e}",
              help="Largest gap, over every pair of positions, between the dot product and the offset-only formula.")
    c2.metric("PE_p · PE_p (squared length)", f"{sim[0, 0]:.3f}",
              help="The diagonal: d_model / 2 for an even width (each pair contributes sin² + cos² = 1).")
    st.caption("Odd d_model: the last, unpaired sine adds sin(ωp)·sin(ω(p+k)), which depends on p, "
               "so the gap above is not just rounding." if d_model % 2 else
               "Even d_model: every sine has its cosine, so the gap above is rounding error only.")

    with fixed_slot():
        if positions >= 41:
            probe = positional_encoding(41, d_model)
            near, far = float(probe[10] @ probe[11]), float(probe[10] @ probe[40])
            predict_then_reveal(
                f"With d_model = {d_model}: which position's encoding has the larger dot product with position 10's?",
                ["position 11", "position 40"], "position 11" if near > far else "position 40",
                f"PE₁₀ · PE₁₁ = {near:.3f} and PE₁₀ · PE₄₀ = {far:.3f}. Most dimensions vary slowly, so neighbouring "
                "positions get similar vectors (for very small d_model the few fast waves can break this).",
                key="pe_similarity",
            )

    show_source(positional_encoding, wavelengths, position_similarity, similarity_at_offset)


live()
