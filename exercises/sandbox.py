"""What a learner's code must leave as it found it: the interpreter's shared state.

The page runs every Run and Check in one Python (Pyodide in a Web Worker), and
``python -m exercises check`` checks several steps in one process. A learner's
code that patches ``math.exp``, ``builtins.len`` or ``sys.modules`` would
otherwise change what later code sees, the tests' own expected values
included (they are worked out with ``math``, ``random`` and the emulator).

:class:`Snapshot` records, before the learner's code runs:

- the builtins, and every entry of ``sys.modules`` (which module object each
  name maps to);
- the namespace of every module loaded then (which object each name maps to):
  every name of our own packages and of modules written in C (math.pi too),
  and the functions, classes and modules of the others (a module written in
  Python may rebind its own plain values, as tempfile.tempdir or a library's
  timers do, and that is no change);
- the attributes of every class those modules define in Python (a patched
  method of ``random.Random`` or of the instruments' counting lists; here a
  new name is a change too, since it may hide an inherited one);
- the items of the lists, dicts and sets that our own packages (emulator,
  exercises) and the step's tests keep at module level (the manifest, the
  tiling rules), one level deep (items added since, as a cache fills, are
  not a change);
- a few settings that live in ``sys`` rather than in a namespace: the
  recursion limit, the int-to-str digit limit, the trace and profile hooks,
  ``sys.path``, ``sys.meta_path``; and whether ``gc`` is enabled.

:meth:`Snapshot.changes` names what differs now ("math.exp",
"builtins.len", "sys.modules['math']", "sys.setrecursionlimit"), and
:meth:`Snapshot.restore` puts it back. New names are not changes (an
``import`` adds modules and attributes); replacing or deleting one is.
sys.stdout and sys.stderr are not watched: the runner always puts them back
(exercises.runner.captured).

This is a guard against accidents and experiments, not a jail: code that
means to can still reach the tests through the garbage collector or a frame.
The page adds the other half: a worker whose Python was touched is replaced by
a fresh one before the next request (site/static/js/exercise/runner.js).
"""
from __future__ import annotations

import builtins
import gc
import io
import sys
import tokenize

from emulator.i18n import _, group

# The guard's own builtins: a copy taken at import, so that code which deletes or
# replaces builtins.all, builtins.len (or every builtin, compile and __import__
# included) cannot stop the guard that puts them back. Functions defined below
# look their builtins up here, not in the builtins module. Likewise the few
# functions of sys and gc the guard calls, which the snapshot does not watch.
BUILTINS = dict(builtins.__dict__)  # as they were at import (exercises.runner gives the tests a copy)
__builtins__ = dict(BUILTINS)
_BUILTINS = builtins.__dict__  # the shared dict that learner code may change
_SYS = {name: getattr(sys, name) for name in (
    "getrecursionlimit", "setrecursionlimit", "gettrace", "settrace", "getprofile", "setprofile",
    "get_int_max_str_digits", "set_int_max_str_digits") if hasattr(sys, name)}
_GC = {"isenabled": gc.isenabled, "enable": gc.enable, "disable": gc.disable}
_MODULES = sys.modules  # the dict itself: code that rebinds sys.modules does not hide it
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))

IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a class written in C, whose attributes cannot be set
OURS = ("emulator", "exercises", "tests_")  # packages (and the step's tests) whose module-level containers we watch
_MISSING = object()
_UNWATCHED = {"exercises.sandbox._BUILTINS", "exercises.sandbox._MODULES", "exercises.sandbox.BUILTINS"}
CHECKERS_OWN = {"os._exit"}  # swapped by exercises.runner.captured while learner code runs, put back after


def _settings() -> dict:
    out = {
        "sys.setrecursionlimit": _SYS["getrecursionlimit"](),
        "sys.settrace": _SYS["gettrace"](),
        "sys.setprofile": _SYS["getprofile"](),
        "gc.disable": _GC["isenabled"](),
    }
    if "get_int_max_str_digits" in _SYS:
        out["sys.set_int_max_str_digits"] = _SYS["get_int_max_str_digits"]()
    return out


def _restore_setting(name: str, value) -> None:
    if name == "gc.disable":
        _GC["enable" if value else "disable"]()
    else:
        _SYS[name[4:]](value)


def _forged(name: str, value) -> bool:
    """Whether a sys.modules entry added since the snapshot, under the name of a
    standard module or of ours, is something an import would not have put there
    (a module made by hand, or another module under this name): a later import
    of that name would get it instead of the real module."""
    top = name.partition(".")[0]
    if top not in _STDLIB and not name.startswith(OURS):
        return False
    spec = getattr(value, "__spec__", None) if isinstance(value, type(sys)) else None
    return spec is None or getattr(spec, "name", None) != name


def _same_list(a: list, b: list) -> bool:
    """Whether two lists hold the same objects (identity: no __eq__ of an item runs)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _compiled(mod) -> bool:
    """Whether ``mod`` is written in C (built in, or an extension module such as
    math): its own code never rebinds its names, so any change came from outside."""
    file = getattr(mod, "__file__", None)
    return getattr(mod, "__name__", None) in sys.builtin_module_names or (
        isinstance(file, str) and file.endswith((".so", ".pyd")))


def _shared(value) -> bool:
    """Whether a module-level name holding ``value`` is watched in a module
    written in Python: functions, classes and modules are; plain values are not,
    as modules rebind their own (tempfile.tempdir, a library's timers)."""
    return callable(value) or isinstance(value, type(sys))


def _container_copy(value):
    if type(value) is list:
        return list(value)
    if type(value) is dict:
        return dict(value)
    if type(value) is set:
        return set(value)
    return _MISSING


def _same_items(value, copy) -> bool:
    """Whether every item of ``copy`` is still in ``value`` (items added since,
    as a cache fills, are not a change)."""
    if len(value) < len(copy):
        return False
    if type(value) is dict:
        return all(value.get(k, _MISSING) is v for k, v in copy.items())
    if type(value) is set:
        return copy <= value
    return all(a is b for a, b in zip(value, copy, strict=False))


class Snapshot:
    """The shared state as it is now; see the module docstring for what it holds."""

    def __init__(self, watch_modules=None):
        self.touched: list[str] = []  # what callers found changed so far (exercises.runner fills it)
        self.builtins = dict(_BUILTINS)
        self.modules = dict(_MODULES)
        self.namespaces = {}
        self.classes = {}
        self.containers = {}
        for name, mod in self.modules.items():
            space = getattr(mod, "__dict__", None)
            if not isinstance(space, dict) or name in ("sys", "builtins", "__main__"):
                continue
            ours = name.startswith(OURS) or (watch_modules is not None and name in watch_modules)
            whole = ours or _compiled(mod)
            self.namespaces[name] = (space, {k: v for k, v in space.items()
                                             if (whole or _shared(v)) and f"{name}.{k}" not in CHECKERS_OWN})
            for key, value in space.items():
                if isinstance(value, type):
                    if not value.__flags__ & IMMUTABLE_TYPE and value.__module__ == name:
                        self.classes[f"{name}.{key}"] = (value, dict(value.__dict__))
                elif ours and not key.startswith("__") and f"{name}.{key}" not in _UNWATCHED:
                    copy = _container_copy(value)
                    if copy is not _MISSING:
                        self.containers[f"{name}.{key}"] = (value, copy)
        self.sys_lists = {"sys.path": list(sys.path), "sys.meta_path": list(sys.meta_path)}
        self.settings = _settings()

    def changes(self) -> list[str]:
        """What the code since the snapshot replaced or removed, by name, in a stable order.

        The builtins are put back as soon as they are compared: the rest of the
        comparison may run Python code of other modules (a module's own
        __getattr__), which needs them."""
        found = []
        now = _BUILTINS
        found += [f"builtins.{k}" for k, v in self.builtins.items() if now.get(k, _MISSING) is not v]
        if found:
            self._restore_builtins()
        found += [f"sys.modules[{k!r}]" for k, v in self.modules.items() if _MODULES.get(k, _MISSING) is not v]
        found += [f"sys.modules[{k!r}]" for k, v in list(_MODULES.items())
                  if k not in self.modules and _forged(k, v)]
        for name, (space, copy) in self.namespaces.items():
            found += [f"{name}.{k}" for k, v in copy.items() if space.get(k, _MISSING) is not v]
        for label, (cls, copy) in self.classes.items():
            attrs = cls.__dict__
            found += [f"{label}.{k}" for k, v in copy.items() if attrs.get(k, _MISSING) is not v]
            found += [f"{label}.{k}" for k in attrs if k not in copy]  # a new name may hide an inherited one
        found += [label for label, (value, copy) in self.containers.items() if not _same_items(value, copy)]
        found += [k for k, v in self.sys_lists.items() if not _same_list(getattr(sys, k[4:]), v)]
        found += ["sys.modules"] if sys.modules is not _MODULES else []
        found += [k for k, v in _settings().items() if self.settings.get(k, v) != v]
        return found

    def _restore_builtins(self) -> None:
        now = _BUILTINS
        for k, v in self.builtins.items():
            if now.get(k, _MISSING) is not v:
                now[k] = v

    def restore(self) -> None:
        """Put back everything :meth:`changes` can name (additions stay)."""
        self._restore_builtins()
        for k, v in self.modules.items():
            if _MODULES.get(k, _MISSING) is not v:
                _MODULES[k] = v
        for k in [k for k, v in list(_MODULES.items()) if k not in self.modules and _forged(k, v)]:
            del _MODULES[k]
        if sys.modules is not _MODULES:
            sys.modules = _MODULES
        for space, copy in self.namespaces.values():
            for k, v in copy.items():
                if space.get(k, _MISSING) is not v:
                    space[k] = v
        for cls, copy in self.classes.values():
            for k in [k for k in cls.__dict__ if k not in copy]:
                try:
                    delattr(cls, k)
                except (AttributeError, TypeError):
                    pass
            for k, v in copy.items():
                if cls.__dict__.get(k, _MISSING) is not v:
                    try:
                        setattr(cls, k, v)
                    except (AttributeError, TypeError):  # e.g. __dict__ itself: leave it
                        pass
        for value, copy in self.containers.values():
            if not _same_items(value, copy):
                value.clear()
                if type(value) is list:
                    value.extend(copy)
                else:
                    value.update(copy)
        sys.path[:] = self.sys_lists["sys.path"]
        sys.meta_path[:] = self.sys_lists["sys.meta_path"]
        for k, v in self.settings.items():
            if _settings().get(k) != v:
                _restore_setting(k, v)


# ---------------------------------------------------------------------------
# Nesting

MAX_DEPTH = 100  # brackets, operators and calls inside one another, in one expression
_OPEN, _CLOSE = "([{", ")]}"
_SEPARATORS = {",", ";", ":", "=", "->", ":=", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "**=",
               ">>=", "<<=", "&=", "|=", "^="}
_CHAIN_WORDS = {"and", "or", "not", "if", "else", "lambda", "await", "in", "is"}


def nesting_depth(source: str) -> tuple[int, int]:
    """How deeply one expression of ``source`` nests, estimated from its tokens,
    and the line where it is deepest: ``(depth, line)``.

    Each bracket counts one level, and so does each operator or call chained
    at the same level (``1+1+1`` is a tree three deep, ``f()()`` two); a
    comma, colon or ``=`` starts a new chain, so a flat list of 10,000 numbers
    is 1 deep. Source the tokenizer cannot read gives ``(0, 0)``: compile()
    will say what is wrong with it.
    """
    deepest, where = 0, 0
    base, chain = [0], [0]  # per open bracket: depth where it opened, and the chain in it so far
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NEWLINE:
                base, chain = [0], [0]
                continue
            text = tok.string
            if tok.type == tokenize.OP and text in _OPEN:
                base.append(base[-1] + chain[-1] + 1)
                chain.append(0)
            elif tok.type == tokenize.OP and text in _CLOSE:
                if len(base) > 1:
                    base.pop()
                    chain.pop()
                chain[-1] += 1  # what follows a closed bracket chains on it: f()(), (a)+b
                continue
            elif tok.type == tokenize.OP and text in _SEPARATORS:
                chain[-1] = 0
                continue
            elif (tok.type == tokenize.OP and text != ".") or text in _CHAIN_WORDS or text == ".":
                chain[-1] += 1
            else:
                continue
            if base[-1] + chain[-1] > deepest:
                deepest, where = base[-1] + chain[-1], tok.start[0]
    except (tokenize.TokenError, SyntaxError):
        return 0, 0
    return deepest, where


def refuse_deep_nesting(source: str, filename: str) -> None:
    """Raise SyntaxError ("nested too deeply") when one expression of ``source``
    nests past :data:`MAX_DEPTH` (see :func:`nesting_depth`), before anything
    compiles or parses it.

    CPython refuses such code with a RecursionError or "too many nested
    parentheses"; Pyodide's C stack, inside the browser's own, can run out
    first (a 2,000-term ``1+1+...`` already kills ast.parse there, and Python
    with it), so the page and the CLI refuse it the same way, here.
    """
    depth, line = nesting_depth(source)
    if depth > MAX_DEPTH:
        lines = source.splitlines()
        text = lines[line - 1] if 0 < line <= len(lines) else None
        raise SyntaxError(
            _("nested too deeply: about {depth} brackets, operators or calls inside one another, "
              "and the checker takes at most {limit} (Python in a browser runs out of stack)").format(
                depth=group(depth), limit=group(MAX_DEPTH)),
            (filename, line, 1, text[:200] if text else None))
