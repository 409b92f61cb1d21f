"""The positional encoding page's notebook: the sine/cosine table, its waves, and the similarity of positions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from notebooks.builder import HEATMAP, POSITIONAL, Notebook

TITLE = "Positional encoding"


def settings(state: Mapping[str, Any]) -> dict[str, Any]:
    """The number of positions T, d_model, and the dimensions whose waves are drawn."""
    d_model = int(state["d_model"])
    dims = sorted(int(d) for d in state["dims"])
    if any(not 0 <= d < d_model for d in dims):
        raise ValueError(f"dimensions {dims} are not all below d_model = {d_model}.")
    return {"positions": int(state["positions"]), "d_model": d_model, "dims": dims}


def cells(nb: Notebook) -> None:
    nb.md(r"""
Attention compares contents only, so on its own it cannot tell the first word from the last. The original
Transformer fixes this by adding a fixed vector to each token's embedding, one per position, built from sines and
cosines. Each pair of dimensions turns at its own speed: the first pair changes every step, the last barely moves
over thousands of steps, so together they give every position a distinct fingerprint. Nothing here is learned.

$$PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{model}}}\right),\qquad
PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{model}}}\right)$$

## 1 · The encoding table

One row per position, one column per dimension: this whole row is added to the embedding of the token at that
position. Even columns hold sines, odd columns cosines; read left to right, the waves get slower.
""")
    nb.code(POSITIONAL + """
pe = positional_encoding(positions, d_model)  # (T, d_model)
print(f"positional encoding, {positions} positions x {d_model} dims:\\n", pe)
distinct = len({tuple(row) for row in np.round(pe, 9) + 0.0})  # + 0.0: -0.0 and 0.0 are one number
print(f"distinct rows: {distinct} of {positions}")
""")
    nb.code(HEATMAP + """
shown = pe[:64, :64]  # a heatmap of at most 64 x 64 cells: enough to see the waves slow down
heatmap(shown, [str(p) for p in range(shown.shape[0])], [str(d) for d in range(shown.shape[1])],
        "PE (positions x dims)", scheme="redblue")
""")
    nb.md(r"""
## 2 · Waves of different lengths

Each column of the table samples one wave at the integer positions. Dimensions 2i and 2i + 1 share the frequency ω_i,
so they repeat every λ_i positions; λ grows geometrically with i, from 2π at the first pair to almost 2π · 10000 at
the last.

$$\omega_i = \frac{1}{10000^{2i/d_{model}}},\qquad \lambda_i = \frac{2\pi}{\omega_i} = 2\pi \cdot 10000^{2i/d_{model}}$$
""")
    nb.code("""
omega = 1 / np.power(10000.0, 2 * (np.arange(d_model) // 2) / d_model)  # (d_model,): dims 2i, 2i+1 share one
wavelengths = 2 * np.pi / omega  # (d_model,)
for d in dims:
    print(f"dim {d}: {'sine' if d % 2 == 0 else 'cosine'}, omega = {omega[d]:.4g}, wavelength = {wavelengths[d]:,.2f}")
p = np.linspace(0, max(positions - 1, 1), 400)  # real positions, for smooth curves
curves = pd.DataFrame([(x, f"dim {d}", np.sin(omega[d] * x) if d % 2 == 0 else np.cos(omega[d] * x))
                       for d in dims for x in p], columns=["position", "dimension", "value"])
alt.Chart(curves, title="the chosen dimensions' waves").mark_line().encode(
    x="position:Q", y="value:Q", color="dimension:N")
""")
    nb.md(r"""
## 3 · Nearby positions are similar

The dot product of two position vectors is large when the positions are close and falls off with distance. Each
sine/cosine pair is a point on a circle turned by ω_i·p, so the dot product only depends on the offset k between the
positions, not on where they are: attention can read relative position from it. (An odd d_model's last, unpaired
sine adds a term that depends on p.)

$$PE_p \cdot PE_{p+k} = \sum_i \cos(\omega_i\, k)\quad\text{(every full sine/cosine pair)}$$
""")
    nb.code("""
similarity = pe @ pe.T  # (T, d_model) @ (d_model, T) -> (T, T)
offsets = np.arange(positions)
offset_formula = np.cos(offsets[:, None] * omega[0 : 2 * (d_model // 2) : 2][None, :]).sum(axis=1)  # (T,): s(k)
k = np.abs(offsets[None, :] - offsets[:, None])  # (T, T): the offset of every pair
offset_error = np.abs(similarity - offset_formula[k]).max()
print("PE . PE^T:\\n", similarity)
print(f"\\nmax gap to the offset-only formula: {offset_error:.1e}   PE_p . PE_p = {similarity[0, 0]:.3f}")
sim_shown = similarity[:64, :64]
heatmap(sim_shown, [str(p) for p in range(len(sim_shown))], [str(p) for p in range(len(sim_shown))],
        "PE . PE^T (positions x positions)")
""")
