"""A small numpy forward pass of a BERT encoder, up to each layer's Q, K and V.

Follows the BERT architecture (Devlin et al. 2019, arXiv:1810.04805, §3) as
the model's config.json describes it: post-layer-norm blocks, exact (erf) GELU,
layer-norm epsilon 1e-12, learned absolute positions, token type 0 for a single
sentence. Attention inside the encoder is bidirectional and unmasked (one
sentence, no padding), softmax(Q K^T / sqrt(d)) V per head (§3.2.1 of Vaswani
et al. 2017, arXiv:1706.03762).

Arithmetic is float64 throughout (the weights are float32); the Q, K and V
handed out are rounded once to float32 at the end. float64 keeps the result
independent of BLAS summation order to far below one float32 ulp, so the facts
rebuild bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _linear(x: np.ndarray, weights: dict, name: str) -> np.ndarray:
    w = weights[name + ".weight"].astype(np.float64)  # (out, in)
    b = weights[name + ".bias"].astype(np.float64)
    return x @ w.T + b


def _split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    n, hidden = x.shape
    return x.reshape(n, n_heads, hidden // n_heads).transpose(1, 0, 2)  # (H, N, d)


_DONE: dict = {}  # (id(model), ids, layers) -> (model, result): each sentence's pass runs once


def qkv_per_layer(model, ids: np.ndarray, layers=None) -> dict:
    """Q, K and V of every head for the chosen layers (computed once per model, sentence
    and layers: facts.compute and facts.held_out_f16 both read the held-out sentences' pass).

    model: a facts.model.Model. ids: int64 token ids, shape (N,), with [CLS]
    and [SEP] included. layers: iterable of layer indices (0-based), default
    all. Returns {layer: {"Q": (H, N, d), "K": (H, N, d), "V": (H, N, d)}},
    float32 arrays, unscaled (the 1/sqrt(d) is applied to the scores, not Q).
    Raises ValueError for a layer index outside the model.
    """
    key = (id(model), np.asarray(ids).tobytes(), None if layers is None else tuple(sorted(set(layers))))
    done = _DONE.get(key)
    if done is not None and done[0] is model:
        return done[1]
    out = _qkv(model, ids, layers)
    _DONE[key] = (model, out)
    return out


def _qkv(model, ids: np.ndarray, layers) -> dict:
    w = model.weights
    cfg = model.config
    eps = float(cfg["layer_norm_eps"])
    heads = model.n_heads
    wanted = set(range(model.n_layers) if layers is None else layers)
    if not wanted <= set(range(model.n_layers)):
        raise ValueError(f"layers {sorted(wanted)} outside 0..{model.n_layers - 1}")
    n = ids.shape[0]

    x = (
        w["embeddings.word_embeddings.weight"][ids].astype(np.float64)
        + w["embeddings.position_embeddings.weight"][:n].astype(np.float64)
        + w["embeddings.token_type_embeddings.weight"][0].astype(np.float64)
    )
    x = _layer_norm(
        x,
        w["embeddings.LayerNorm.weight"].astype(np.float64),
        w["embeddings.LayerNorm.bias"].astype(np.float64),
        eps,
    )
    out = {}
    for layer in range(max(wanted) + 1):
        p = f"encoder.layer.{layer}."
        q = _split_heads(_linear(x, w, p + "attention.self.query"), heads)
        k = _split_heads(_linear(x, w, p + "attention.self.key"), heads)
        v = _split_heads(_linear(x, w, p + "attention.self.value"), heads)
        if layer in wanted:
            out[layer] = {
                "Q": q.astype(np.float32),
                "K": k.astype(np.float32),
                "V": v.astype(np.float32),
            }
        if layer == max(wanted):
            break
        d = q.shape[-1]
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)  # (H, N, N)
        s = s - s.max(axis=-1, keepdims=True)
        pr = np.exp(s)
        pr = pr / pr.sum(axis=-1, keepdims=True)
        ctx = (pr @ v).transpose(1, 0, 2).reshape(n, -1)  # (N, hidden)
        a = _linear(ctx, w, p + "attention.output.dense")
        x = _layer_norm(
            a + x,
            w[p + "attention.output.LayerNorm.weight"].astype(np.float64),
            w[p + "attention.output.LayerNorm.bias"].astype(np.float64),
            eps,
        )
        h = _gelu(_linear(x, w, p + "intermediate.dense"))
        h = _linear(h, w, p + "output.dense")
        x = _layer_norm(
            h + x,
            w[p + "output.LayerNorm.weight"].astype(np.float64),
            w[p + "output.LayerNorm.bias"].astype(np.float64),
            eps,
        )
    return out
