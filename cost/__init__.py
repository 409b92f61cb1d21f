"""`cost`: what attention costs, measured: time and memory of three implementations as T grows.

`cost.measure` holds the implementations (the lesson's NumPy function, naive PyTorch, fused
``scaled_dot_product_attention``), the bounded measurement and the log-log slope fits; `cost.sizes`
the computed sizes of the T × T weights for real models' context lengths.
"""
