"""Cannery's exercise checker: runs one step's tests against a learner's code.

Standard library only, so the same source runs in CPython 3.11 (the offline
path, ``python -m exercises check SLUG FILE``) and in the page's Pyodide
(Python 3.14) worker. The tests and solutions themselves live as content in
``site/content/exercises/SLUG/STEP/`` (tests.py, solution.py, wrong/*.py).

:mod:`exercises.content`  finds exercises and steps on disk
:mod:`exercises.testing`  what a step's tests.py uses: Failure, given(), close()
:mod:`exercises.runner`   loads the learner's module, runs the tests, and
                          reports each failure with its smallest input
"""
