"""Facts about a real pretrained model, computed from its weights.

``python -m facts`` writes facts/facts.json (the figures the film, captions and
sources render) and facts/probe_qkv.json (the probe sentence's Q, K and V for
the lab). ``python -m facts --check`` recomputes both and exits 1 when either
committed file is stale, 2 when the model is not available.

Modules: model (find, verify and load the weights), forward (numpy forward
pass up to Q, K, V), sentences (the inputs), build (the computations).
"""
