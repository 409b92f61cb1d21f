"""`pretrained`: a real Transformer's attention, all-MiniLM-L6-v2, run offline from its pip package.

* `pretrained.minilm`: the model's BERT encoder as a short PyTorch forward pass that keeps every
  layer's attention weights (no Hugging Face at run time);
* `pretrained.model`: finding and loading the weights, running a text, and the cross-check of one
  layer against the lesson's `core.scaled_dot_product_attention`;
* `pretrained.patterns`: which heads follow a habit (previous token, [SEP], …) in the text.
"""
