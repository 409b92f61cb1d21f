"""Every colour a chart draws with, chosen so that every student can see it (WCAG 2.1 AA).

- A mark (a line, a bar, a point, a heatmap's extreme cells) has a contrast of at least 3:1 against the page
  (1.4.11 Non-text contrast): `MIN_MARK_CONTRAST`.
- Text printed in a heatmap cell has at least 4.5:1 against its cell (1.4.3): black or white, whichever is
  darker against it (`ink`, `ink_expr`). The better of the two always reaches about 4.6:1, whatever the cell.
- Series are told apart by hue for the common colour-vision deficiencies: `CATEGORY` is Okabe and Ito's
  palette without its light colours, plus a dark ochre and a dark grey.

Contrast is WCAG's: ``(L₁ + 0.05) / (L₂ + 0.05)`` of the relative luminances, the lighter over the darker.
`tests/ui/charts/test_palette.py` computes it for every colour here against the theme's background, and walks
every page's charts to check that they draw with nothing else.
"""

from __future__ import annotations

import numpy as np

#: The page's background (`.streamlit/config.toml`, ``[theme] backgroundColor``; a test checks they agree).
PAGE_BACKGROUND = "#ffffff"
MIN_MARK_CONTRAST = 3.0
MIN_TEXT_CONTRAST = 4.5

#: Colours of series, in order: blue, vermillion, bluish green, reddish purple, dark ochre, dark grey.
CATEGORY = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#9a6b00", "#555555")
BLUE, VERMILLION, GREEN, PURPLE, OCHRE, DARK_GREY = CATEGORY
#: Text in a series' colour: vermillion darkened to 5:1, as text needs 4.5:1.
VERMILLION_TEXT = "#b84f00"
#: Reference lines and neutral marks (4.5:1).
REFERENCE_GREY = "#767676"
#: A region's tint behind the marks (the future keys of a causal step), not a mark: what it shows is also in the
#: marks' own colours and legend.
BAND_TINT = "#eeeeee"

#: Vega's colour schemes the app uses, as the colour stops vega-scale interpolates linearly in RGB.
SCHEME_STOPS: dict[str, str] = {
    "blueorange": "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07",
    "viridis": (
        "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d"
        "1f988b1fa08822a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725"
    ),
}
#: Signed values (scores, Q, K, V): blue below 0, orange above; both ends are dark.
DIVERGING_SCHEME = "blueorange"
#: Weights in [0, 1]: viridis from its dark purple to its green, which still has 3.4:1 against white. Its
#: yellow end (1.3:1) would vanish into the page.
SEQUENTIAL_SCHEME = {"name": "viridis", "extent": [0.0, 0.55]}


def scheme_name(scheme: str | dict) -> str:
    return scheme if isinstance(scheme, str) else scheme["name"]


def scheme_extent(scheme: str | dict) -> tuple[float, float]:
    return (0.0, 1.0) if isinstance(scheme, str) else tuple(scheme.get("extent", (0.0, 1.0)))


def _rgb_stops(hexes: str) -> np.ndarray:
    """Concatenated ``rrggbb`` colours as RGB, ``(n_stops, 3)`` in 0 … 255 (read-only)."""
    stops = np.array([[int(hexes[i + c : i + c + 2], 16) for c in (0, 2, 4)] for i in range(0, len(hexes), 6)],
                     dtype=np.float64)
    stops.flags.writeable = False
    return stops


#: `SCHEME_STOPS` as RGB arrays, read once.
_RGB_STOPS = {name: _rgb_stops(hexes) for name, hexes in SCHEME_STOPS.items()}


def scheme_stops(scheme: str | dict) -> np.ndarray:
    """The stops of `scheme` as RGB, ``(n_stops, 3)`` in 0 … 255 (read-only)."""
    return _RGB_STOPS[scheme_name(scheme)]


def scheme_rgb(scheme: str | dict, t: np.ndarray) -> np.ndarray:
    """The colour at positions `t` ∈ [0, 1] of `scheme` (within its extent), as Vega draws it: ``(..., 3)``."""
    stops = scheme_stops(scheme)
    lo, hi = scheme_extent(scheme)
    s = (lo + np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0) * (hi - lo)) * (len(stops) - 1)
    k = np.minimum(s.astype(np.int64), len(stops) - 2)  # left stop of each position's segment
    frac = s - k
    rest = 1 - frac
    rgb = np.empty(s.shape + (3,))
    for c in range(3):  # one channel at a time: no (..., 3) copies of the stops for a big image
        channel = stops[:, c]
        left = channel[k]
        left *= rest
        left += channel[k + 1] * frac
        rgb[..., c] = left  # linear in RGB between the two stops: left stop · (1 − frac) + right stop · frac
    return rgb


def relative_luminance(rgb: np.ndarray | str) -> np.ndarray:
    """WCAG's relative luminance of sRGB colours (``(..., 3)`` in 0 … 255, or one ``"#rrggbb"``)."""
    if isinstance(rgb, str):
        rgb = np.array([int(rgb.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4)], dtype=np.float64)
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])  # L = 0.2126 R + 0.7152 G + 0.0722 B


def contrast(a: np.ndarray | str, b: np.ndarray | str) -> np.ndarray:
    """WCAG contrast ratio (L_lighter + 0.05) / (L_darker + 0.05), from 1 to 21."""
    la, lb = relative_luminance(a), relative_luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


#: Below this luminance white text has more contrast on a cell than black: (1.05)/(L+0.05) = (L+0.05)/0.05.
WHITE_TEXT_BELOW = float(np.sqrt(1.05 * 0.05) - 0.05)


def _white_on(scheme: str | dict, t: np.ndarray) -> np.ndarray:
    """Whether white text stands out more than black on the cells at positions `t` of `scheme` (computed)."""
    return relative_luminance(scheme_rgb(scheme, t)) < WHITE_TEXT_BELOW


#: `_ink_edges` 's results by scheme (its name and extent).
_EDGES: dict[tuple[str, tuple[float, ...]], tuple[np.ndarray, bool]] = {}


def _ink_edges(scheme: str | dict, resolution: int = 4001) -> tuple[np.ndarray, bool]:
    """Where on `scheme` the better text colour changes, to 1e-12 (each change found on a grid of `resolution`
    points, then by bisection), and whether it is white at 0."""
    key = (scheme_name(scheme), tuple(scheme_extent(scheme)))
    if key not in _EDGES:
        grid = np.linspace(0.0, 1.0, resolution)
        white = _white_on(scheme, grid)
        edges = []
        for k in np.flatnonzero(white[1:] != white[:-1]):  # the change lies in (grid[k], grid[k + 1]]
            lo, hi = grid[k], grid[k + 1]
            while hi - lo > 1e-12:
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if _white_on(scheme, np.array([mid]))[0] == white[k] else (lo, mid)
            edges.append(hi)
        _EDGES[key] = (np.array(edges), bool(white[0]))
    return _EDGES[key]


def ink(scheme: str | dict, t: np.ndarray) -> np.ndarray:
    """``"white"`` or ``"black"`` for text on the cells at positions `t` of `scheme`: the one that stands out more.

    Read from where on the scheme the better colour changes (`_ink_edges`, found once per scheme): a position
    past an even number of changes has the colour of position 0.
    """
    edges, white_at_0 = _ink_edges(scheme)
    changes = np.searchsorted(edges, t, side="right")  # below 0 or above 1: as at 0 or 1
    return _INKS[white_at_0][changes & 1]


#: The text colours by whether white comes first on a scheme, then by the parity of the changes passed.
_INKS = {True: np.array(["white", "black"]), False: np.array(["black", "white"])}


def ink_on(colour: str) -> str:
    """``"white"`` or ``"black"`` for text on a cell of one fixed `colour`: the one that stands out more."""
    return "white" if relative_luminance(colour) < WHITE_TEXT_BELOW else "black"


def white_text_ranges(scheme: str | dict, resolution: int = 4001) -> list[tuple[float, float]]:
    """The intervals of t ∈ [0, 1] on which `ink` is white (to 1/(resolution − 1))."""
    t = np.linspace(0.0, 1.0, resolution)
    white = _white_on(scheme, t)
    edges = np.flatnonzero(np.diff(white.astype(np.int8))) + 1  # first index of each new run
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [resolution]]) - 1
    return [(float(t[s]), float(t[e])) for s, e in zip(starts, ends, strict=True) if white[s]]


def ink_expr(scheme: str | dict, t: str) -> str:
    """`ink` as a Vega expression of the position `t` (an expression in [0, 1]), for inks computed in the browser."""
    tests = [f"({t} <= {hi:.4f})" if lo == 0.0 else f"({t} >= {lo:.4f})" if hi == 1.0 else
             f"({t} >= {lo:.4f} && {t} <= {hi:.4f})" for lo, hi in white_text_ranges(scheme)]
    return f"({' || '.join(tests) or 'false'}) ? 'white' : 'black'"
