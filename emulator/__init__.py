"""Cannery's attention emulator: pure standard-library Python.

Counts the bytes each attention kernel moves to and from global memory
(:mod:`emulator.traffic`), mirrors each kernel's float32 arithmetic tile by
tile (:mod:`emulator.attention` forward, :mod:`emulator.backward_mirrors`
backward, each found through the manifest by :mod:`emulator.mirrors`), and
checks it against an exact float64 answer (:mod:`emulator.accuracy`,
:mod:`emulator.backward`). The same source runs in CPython 3.11 and in
the page's Pyodide (Python 3.14) worker, through :func:`lab_api.handle`.
"""
