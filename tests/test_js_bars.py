"""The Count chart's totals (site/static/js/bars.js sizes, under node): one precision
per unit in a chart. It once drew "1.0 GiB" beside "1.25 GiB"."""
from __future__ import annotations

import pytest
from page_language import node_env
from test_js_parity import NODE, js

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

GIB, MIB = 2 ** 30, 2 ** 20


def sizes(values, lang="en", folder=None):
    env = node_env(lang, folder) if lang != "en" else None
    (reply,) = js([{"fn": "sizes", "args": [values]}], env=env)
    assert reply["ok"], reply
    return reply["value"]


@pytest.mark.parametrize("values, shown", [
    ([GIB, 1.25 * GIB], ["1.00 GiB", "1.25 GiB"]),
    ([1.25 * GIB, 2 * GIB, 272.5 * MIB], ["1.25 GiB", "2.00 GiB", "272.5 MiB"]),
    ([1.5 * GIB, 2 * GIB], ["1.5 GiB", "2.0 GiB"]),
    ([272.5 * MIB, 16.5 * MIB, 16 * 1024], ["272.5 MiB", "16.5 MiB", "16.0 KiB"]),
])
def test_totals_side_by_side_share_one_precision_per_unit(values, shown):
    assert sizes(values) == shown
    for unit in ("GiB", "MiB", "KiB"):
        places = {len(s.split()[0].partition(".")[2]) for s in shown if s.endswith(unit)}
        assert len(places) <= 1, (unit, shown)


def test_in_pt_br_the_totals_keep_the_precision_with_a_comma(tmp_path):
    assert sizes([GIB, 1.25 * GIB], "pt-BR", tmp_path) == ["1,00 GiB", "1,25 GiB"]
