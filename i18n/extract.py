"""Babel extraction methods for words that live as data rather than in code.

Registered by name in a domain's mapping file (``locale/site.cfg``)::

    [extractors]
    manifest_labels = i18n.extract:manifest_labels
    [manifest_labels: kernels_wgsl/manifest.json]

so ``python -m i18n update`` (pybabel extract) finds each kernel's ``label``
in the manifest, and a template shows it translated with ``_(label)``: a new
kernel's label reaches the catalogs from its manifest entry alone.
"""
from __future__ import annotations

import json


def _line_of(text: str, needle: str, start: int) -> tuple[int, int]:
    """(1-based line, offset) of the first ``needle`` in ``text`` at or after ``start``;
    (1, start) when it is not there."""
    at = text.find(needle, start)
    if at < 0:
        return 1, start
    return text.count("\n", 0, at) + 1, at


def manifest_labels(fileobj, keywords, comment_tags, options):
    """Babel extraction method: each kernel's ``label`` in a kernel manifest, as a msgid.

    fileobj: the manifest (kernels_wgsl/manifest.json), opened in binary mode,
    UTF-8 JSON with a "kernels" object of {name: {"label": str, ...}}.
    keywords, comment_tags, options: as Babel passes them to every extraction
    method (unused: the label is the message). Yields (line, None, label,
    [a comment naming the kernel]) in manifest order, the line being where the
    label is written. Raises ValueError for a file that is not such JSON.
    """
    text = fileobj.read().decode("utf-8")
    data = json.loads(text)
    offset = 0
    for name, entry in data["kernels"].items():
        label = entry.get("label")
        if not label:
            continue
        _line, offset = _line_of(text, json.dumps(name) + ":", offset)
        line, _at = _line_of(text, '"label": ' + json.dumps(label, ensure_ascii=False), offset)
        yield line, None, label, [f"The label of the kernel {name} (the lab's Kernel menu)."]
