"""A decoder that writes: a small decoder-only Transformer trained on a made-up language, and its sampling."""
