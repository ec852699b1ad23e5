"""The learner's code runs without the project's answers.

A Check runs the learner's module with builtins of its own
(:func:`builtins_for`), whose ``__import__`` refuses

- the project's own packages (:data:`OWN_PACKAGES`: the emulator holds every
  answer the tests compare with, ``exercises`` the harness and its
  instruments), and the step's tests (``tests*``);
- the modules that reach the interpreter's insides, the callers' frames or the
  instruments (:data:`HARNESS`: ``sys``, ``inspect``, ``gc``, ``importlib``,
  ``builtins``, ``ctypes``, ``traceback``, ``tracemalloc``…, and in the page
  Pyodide's ``js`` and ``pyodide``), with their submodules,

however the name is built: ``import``, ``__import__("".join([...]))``, or
``importlib.import_module`` (importlib itself is refused). Every other module
(``math``, ``struct``, ``random``, ``itertools``, ``functools``,
``dataclasses``, ``typing``, ``collections``, ``heapq``, ``operator``,
``fractions``, ``decimal``, ``statistics``…) imports as usual; one that holds
a refused module among its attributes (``os.sys``, ``random._os``,
``collections._sys``, ``typing.sys``) comes as a stand-in (:class:`StandIn`):
the same functions, classes and values, the refused modules hidden, the others
stand-ins in turn. A module with no module among its attributes (``math``,
``struct``, ``itertools``) is the real one.

A refusal is an ImportError (:func:`refuse`), or an AttributeError
(:func:`hide`) for a hidden attribute, both saying "this step runs your code without the project's
own modules: the count is yours to write"; ``exercises.testing.given`` turns
one raised inside a test into a failure of that input with the same words.

This keeps a *natural* shortcut from passing; it is not a jail. A determined
escape (a builtin function's ``__self__``, a library function's
``__globals__``, a traceback's frames) still reaches the interpreter, and the
tests are readable in the page anyway: the teachers' page says so. The Run
button (exercises.runner.run) is not guarded: it grades nothing.

Standard library only: the same source runs in CPython 3.11 and in the page's
Pyodide (Python 3.14).
"""
from __future__ import annotations

import ast
import builtins
import types

from emulator.i18n import _

#: The project's own packages: code that imports them borrows the answer (the
#: emulator's counts and reference are what the tests compare with).
OWN_PACKAGES = ("emulator", "exercises", "course", "bench", "build", "cannery_host", "film", "facts", "i18n",
                "sitebuild", "planner", "lab_api", "kernels_wgsl", "tests", "conftest")

#: Modules that reach the interpreter's insides: the callers' frames (and so the
#: tests' expected values), the module table, the garbage collector's view of every
#: object, the memory tracer the instruments use, the page's JavaScript.
HARNESS = ("sys", "inspect", "gc", "importlib", "builtins", "ctypes", "_ctypes", "traceback", "tracemalloc",
           "_tracemalloc", "logging", "pdb", "bdb", "signal", "faulthandler", "runpy", "pkgutil", "zipimport",
           "_imp", "_frozen_importlib", "_frozen_importlib_external", "_testcapi", "_testinternalcapi",
           "_testbuffer", "_xxsubinterpreters", "_interpreters", "js", "pyodide", "_pyodide", "pyodide_js",
           "micropip")

#: Modules whose memory lives outside Python's allocator, where tracemalloc (the tests'
#: measure of what the code holds) cannot see it: a table kept there would look free.
UNMEASURED = ("mmap", "_posixshmem", "multiprocessing", "_multiprocessing")

#: Attributes that reach the interpreter's insides or the instruments' own state without
#: an import: frames (and so the tests' expected values), a function's globals, every
#: class of the process, a builtin's module, and the counters the instruments keep on the
#: values they hand in (``__builtins__`` is the module's own guarded copy, so it may be
#: named). Checked in the learner's source (attributes and string constants), so
#: ``e.__traceback__.tb_frame.f_back`` and ``getattr(x, "__globals__")`` are refused alike.
INSIDES = frozenset({
    "__globals__", "__subclasses__", "__traceback__", "__self__", "__closure__", "__code__",
    "__base__", "__bases__", "__mro__",
    "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins", "f_code",
    "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code",
    "_values", "_counter", "_make", "_recorder", "_tensors",
})

#: Names taken out of the learner's builtins: the import machinery's own objects.
NOT_IN_BUILTINS = ("__loader__", "__spec__")


def refused(name) -> bool:
    """Whether the module ``name`` ("emulator.attention", "sys", "tests_probe") is refused."""
    if not isinstance(name, str):
        return False
    top = name.split(".")[0]
    return top in HARNESS or top in OWN_PACKAGES or top in UNMEASURED or top.startswith("tests")


def message(name: str) -> str:
    """The refusal, in the learner's language, naming the module."""
    if name.split(".")[0] in UNMEASURED:
        return _("{module}: this step measures the memory your code holds, and memory outside Python's "
                 "own objects is not measured: keep your values in Python objects").format(module=name)
    return _("{module}: this step runs your code without the project's own modules: "
             "the count is yours to write").format(module=name)


def reaches_inside(source: str) -> tuple[str, int] | None:
    """The first attribute of :data:`INSIDES` that ``source`` names, as an attribute
    (``x.__globals__``) or as a string (``getattr(x, "tb_frame")``), with its line;
    None when there is none or the source does not parse (compile() says why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in INSIDES:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in INSIDES:
            found.append((node.lineno, node.value))
    if not found:
        return None
    line, attr = min(found)
    return attr, line


def refuse_insides(source: str, filename: str) -> None:
    """Raise SyntaxError naming the attribute when ``source`` reaches the interpreter's
    or the instruments' insides (:func:`reaches_inside`), before it runs."""
    hit = reaches_inside(source)
    if hit is None:
        return
    attr, line = hit
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else None
    raise SyntaxError(_("{name}: this step runs your code without reaching into Python's own machinery "
                        "(frames, globals, classes) or the tests' instruments: the work is yours to write").format(
                          name=attr), (filename, line, 1, text[:200] if text else None))


def refuse(module: str) -> ImportError:
    """The ImportError for a refused import of ``module`` (a plain ImportError, as the
    learner's traceback names it; its ``refused_module`` tells :func:`refusal` it is ours)."""
    exc = ImportError(message(module), name=module)
    exc.refused_module = module
    return exc


def hide(module: str) -> AttributeError:
    """The AttributeError for a refused module reached as another's attribute (``os.sys``)."""
    exc = AttributeError(message(module))
    exc.refused_module = module
    return exc


class StandIn(types.ModuleType):
    """A module as the learner's code sees it: its names, with every module among
    them refused (:func:`hide`) or a stand-in in turn (made when first read)."""

    def __init__(self, real: types.ModuleType, guard: Guard):
        super().__init__(real.__name__, getattr(real, "__doc__", None))
        self.__dict__.update({k: v for k, v in vars(real).items() if not isinstance(v, types.ModuleType)})
        object.__setattr__(self, "_StandIn__real", real)
        object.__setattr__(self, "_StandIn__guard", guard)

    def __getattr__(self, attr):
        value = getattr(self.__real, attr)  # AttributeError as the real module raises it
        if not isinstance(value, types.ModuleType):
            return value
        if refused(value.__name__):
            raise hide(value.__name__)
        return self.__guard.module(value)


class Guard:
    """One learner module's import rules: :meth:`builtins` is its ``__builtins__``."""

    def __init__(self):
        self._stand_ins: dict[str, types.ModuleType] = {}
        self._real_import = builtins.__import__

    def module(self, real: types.ModuleType) -> types.ModuleType:
        """``real`` as the learner sees it: itself when none of its names is a module,
        else its stand-in (one per module, so ``import random`` twice gives one object)."""
        if not any(isinstance(v, types.ModuleType) for v in vars(real).values()):
            return real
        name = real.__name__
        if name not in self._stand_ins:
            self._stand_ins[name] = StandIn(real, self)
        return self._stand_ins[name]

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        """``__import__`` for the learner's code: refuses :func:`refused` names,
        else imports as usual and hands back :meth:`module` of the result."""
        if level == 0 and refused(name):
            first = next((i for i in fromlist or () if isinstance(i, str) and i != "*"), None)
            raise refuse(f"{name}.{first}" if first else name)
        mod = self._real_import(name, globals, locals, fromlist, level)
        if level == 0 and refused(getattr(mod, "__name__", "")):
            raise refuse(mod.__name__)
        return self.module(mod) if isinstance(mod, types.ModuleType) else mod

    def builtins(self) -> dict:
        """A copy of the builtins with this guard's ``__import__``, for a module's
        ``__builtins__`` (exec, eval and the code's functions all find it there)."""
        space = {k: v for k, v in vars(builtins).items() if k not in NOT_IN_BUILTINS}
        space["__import__"] = self.import_
        return space


def builtins_for() -> dict:
    """Fresh guarded builtins for one learner module (see the module docstring)."""
    return Guard().builtins()


def refusal(exc: BaseException) -> str | None:
    """The refused module's name when ``exc`` (or what caused it) is a refusal, else None."""
    seen = 0
    while exc is not None and seen < 8:
        module = getattr(exc, "refused_module", None)
        if isinstance(module, str):
            return module
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None
