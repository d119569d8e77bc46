"""The program the sandbox runs to test one solution. It is sent as source text and runs alone.

It imports nothing outside the standard library (the sandboxed interpreter sees no installed
packages) and runs on every Python the package supports.

Protocol (the other side is :mod:`mrlm.envs.code.execution`):

- stdin: one JSON object, read whole before the solution runs: ``nonce``, ``solution`` (source),
  ``entry_point``, ``test_setup`` (source), ``steps`` (``[[source, counted], ...]``),
  ``step_time_limit_s`` and ``error_chars``. The test sources call the strict checks as attributes
  of the constant ``STRICT_CONSTANT`` (see :mod:`mrlm.envs.code.strict`).
- stdout: one line ``RESULT_MARKER <nonce> <report>``, where ``<report>`` is the ``repr`` of a dict of
  plain ``str``/``int``/``bool``/``None``/``list`` values. Its ``"stage"`` says how far the run got:
  ``"syntax"`` (the solution does not compile: ``line``, ``column``, ``message``, ``text``),
  ``"load"`` (running the solution's top level failed: ``error``, ``line``, ``timed_out``),
  ``"tests"`` (``results``: one ``[passed, error, timed_out, line]`` per counted step) or
  ``"harness"`` (this program itself failed: ``error``).

The solution runs in this process, so it could try to forge the report. What stands in its way:

- The nonce that authenticates the report line arrives on stdin and is read, with the tests, before
  the solution runs; it is never on disk, in argv or in the environment, and lives only in local
  variables of :func:`main`. The tests never touch the disk either.
- Before the solution runs, an audit hook (PEP 578; it cannot be removed) closes the usual routes to
  another frame's locals: ``sys._getframe``, ``sys._current_frames``, tracing and profiling hooks,
  the ``tb_frame``/``gi_frame``/``cr_frame``/``ag_frame`` attributes, ``gc``'s object-graph walks,
  replacing a function's ``__code__``, adding audit hooks, and ``ctypes`` (its import, and its
  audited operations when the sandbox has it loaded already).
- The solution's standard output and error go to ``/dev/null``; the report goes to a private copy of
  the original stdout through ``os.write``, bound before the solution runs, and is built with
  ``repr`` of exact built-in types rather than with a module the solution could patch.
- Everything used after the solution has run was bound to locals beforehand, and the ``builtins``
  module is restored after every step, so patching this module or the builtins changes nothing.
- Tests run in their own namespace, absent from ``sys.modules``, with a pristine copy of the
  builtins; the solution's names are copied in except those that would shadow a builtin.
- The tests' comparisons, asserted values and arithmetic go through strict checks (the "Strict
  checks" section below), so that a returned object whose ``__eq__`` always says True, whose
  ``__bool__`` lies, or a lying subclass of ``str``/``int``/``list``, passes no test that expects a
  built-in value. The checks are constants of the compiled tests, not names, and look up their own
  globals in a snapshot taken before the solution runs.

What a determined program can still do (the environment documents it): reach this frame through the
frame handed to a signal handler, read raw process memory (``/proc/self/mem``, or unaudited
``ctypes`` pointers where the sandbox has ``ctypes`` loaded), follow objects the tests pass to it back
to the tests' namespace (and from there to the checks' globals), patch shared modules the tests use
(``math``, ...), or lie where the tests trust a value of another type than the built-in ones: when
they expect one (a ``Fraction``, an object of the tests' own class) the two meet as they are; when
the solution's value reaches library code rather than the tests' own operators (``unittest``'s
``assertEqual``, ``sorted``, ``list.count``, ``len``, ``math.isclose``); in augmented assignments
(``x -= y``) and unary operators.
"""

from __future__ import annotations

import _thread
import builtins
import json
import marshal
import operator
import os
import re
import sys
import types
from typing import Any

RESULT_MARKER = "@@mrlm-code-result"
SOLUTION_FILE = "<solution>"
#: Test code reaches the strict checks as attributes of this string constant
#: (``'@@mrlm-strict'.eq(got, expected)``); once the tests are compiled, the constant is replaced by
#: the checks themselves, so no name that the solution could rebind stands between them.
STRICT_CONSTANT = "@@mrlm-strict"
#: The strict checks: comparisons, the truth of an asserted value, and binary arithmetic.
STRICT_CHECKS = ("eq", "ne", "lt", "le", "gt", "ge", "is_in", "not_in", "truth", "arith")

#: Audit events refused once the solution runs.
_BLOCKED_EVENTS = frozenset(
    {
        "sys._current_frames",
        "sys._current_exceptions",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
#: ``sys._getframe`` fails with ValueError, as on a too-short stack, so that the standard library
#: (namedtuple, typing, enum, logging) falls back instead of crashing.
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._getframemodulename"})
_BLOCKED_READS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_BLOCKED_WRITES = frozenset({"__code__"})
_BLOCKED_IMPORTS = frozenset({"ctypes", "_ctypes"})


class StepTimeout(BaseException):
    """Raised by the alarm in a step that runs too long.

    A BaseException, so that ``except Exception`` in the solution does not swallow it.
    """


_TIMEOUT = StepTimeout()


def _on_alarm(signum: int, frame: object, _timeout: BaseException = _TIMEOUT) -> None:
    # A ready-made instance bound as a default: raising it runs no constructor, and replacing this
    # module's globals does not change it.
    raise _timeout


def _make_guard(allowed_thread: list[int | None]) -> Any:
    """The audit hook. Only the thread in ``allowed_thread[0]`` passes, while the harness reads a
    traceback; other threads stay blocked in that window."""
    blocked, frame_events, reads = _BLOCKED_EVENTS, _FRAME_EVENTS, _BLOCKED_READS
    writes, imports, get_ident = _BLOCKED_WRITES, _BLOCKED_IMPORTS, _thread.get_ident

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if allowed_thread[0] is not None and allowed_thread[0] == get_ident():
            return
        if event in frame_events:
            raise ValueError("frame introspection is disabled in this sandbox")
        if event == "sys.addaudithook":
            raise RuntimeError("audit hooks are disabled in this sandbox")  # the new hook is dropped
        if event in blocked or event.startswith("ctypes."):
            raise RuntimeError(f"{event} is disabled in this sandbox")
        if event == "object.__getattr__" and len(args) > 1 and args[1] in reads:
            raise RuntimeError(f"{args[1]} is disabled in this sandbox")
        if event == "object.__setattr__" and len(args) > 1 and args[1] in writes:
            raise RuntimeError(f"setting {args[1]} is disabled in this sandbox")
        if event == "import" and args and args[0] in imports:
            raise ImportError(f"{args[0]} is disabled in this sandbox")

    return guard


def _text(value: object, limit: int) -> str:
    """An exact ``str`` of at most ``limit`` characters; runs no code of a ``str`` subclass."""
    if not isinstance(value, str):
        return "<not text>"
    text = str.__str__(value)
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def _describe(error: BaseException, limit: int) -> str:
    """``"Name: message"`` for an exception; its ``__str__`` may be the solution's code."""
    try:
        name = _text(type(error).__name__, 100)
    except BaseException:
        name = "<unnamed exception>"
    try:
        message = _text(str(error), limit)
    except BaseException:
        message = "<unprintable message>"
    return _text(f"{name}: {message}" if message else name, limit)


def _solution_line(error: BaseException, tools: tuple[Any, ...]) -> int | None:
    """The last line of the solution in ``error``'s traceback, if it passed through the solution.

    Frame access is allowed meanwhile, so nothing here may run the solution's code or look up a
    global it could have replaced: the traceback is read through the base descriptor and the file
    name compared as exact strings, all bound in ``tools`` before the solution ran.
    """
    get_traceback, str_eq, filename, allowed_thread, me = tools
    line = None
    tb = get_traceback(error)
    allowed_thread[0] = me
    try:
        while tb is not None:
            if str_eq(tb.tb_frame.f_code.co_filename, filename) is True:
                line = tb.tb_lineno
            tb = tb.tb_next
    finally:
        allowed_thread[0] = None
    return line


def _syntax_report(error: BaseException, limit: int) -> dict[str, Any]:
    line, column = getattr(error, "lineno", None), getattr(error, "offset", None)
    text, message = getattr(error, "text", None), getattr(error, "msg", None)
    return {
        "stage": "syntax",
        "line": line if type(line) is int else None,
        "column": column if type(column) is int else None,
        "message": _text(message, limit) if isinstance(message, str) else _describe(error, limit),
        "text": _text(text.rstrip("\n"), limit) if isinstance(text, str) else None,
    }


# Strict checks. A solution can return an object that claims to equal anything (``__eq__``), to be
# true (``__bool__``, ``__len__``) or to differ from the expected value by zero (``__sub__``), or a
# subclass of ``str``/``int``/``list`` that does. So the tests' comparisons, asserted values and
# arithmetic call the checks below: a value made of built-in types is copied into exact built-in
# types, subclasses read through their base type so that no override runs, and only such copies
# meet the built-in values that the tests expect. The checks run while the solution's code may have
# patched this module or the builtins, so they run as copies bound to a private snapshot of their
# globals (see _strict_checks).

#: Immutable values whose comparisons run no code but the interpreter's own.
_ATOMS = (type(None), bool, int, float, complex, str, bytes, range)
_ATOM_IDS = frozenset(id(kind) for kind in _ATOMS)
#: Built-in types whose subclasses are read through the base type (bool and range have none).
_BASES = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
_SCALAR_IDS = frozenset(id(kind) for kind in (int, float, complex, str, bytes))
_DICT_KEYS: type = type({}.keys())
_DICT_VALUES: type = type({}.values())
_DICT_ITEMS: type = type({}.items())
#: Exact types whose truth, and whose arithmetic with each other, run no code of the solution.
_EXACT_IDS = _ATOM_IDS | {id(kind) for kind in (*_BASES, _DICT_KEYS, _DICT_VALUES, _DICT_ITEMS)}
_TRUTH_IDS = _EXACT_IDS | {id(re.Match)}
#: A value that holds subclasses and is nested deeper, or holds more items, than this is not
#: checked, and equals nothing (nor does one too deep for ``marshal``, or cyclic; see _view).
_MAX_DEPTH = 100
_MAX_ITEMS = 10_000_000
_EVERYTHING = slice(None)
#: What :func:`_canonical` answers for an object of another type, and for a value past the bounds.
_FOREIGN = object()
_TOO_BIG = object()
#: Bound now: the solution can rebind a module's attributes, not these.
_DUMPS, _LOADS = marshal.dumps, marshal.loads
#: Read-only: the checks' snapshot of this module shares its values, so none of them may be mutable.
_ARITHMETIC = types.MappingProxyType(
    {
        "+": operator.add,
        "-": operator.sub,
        "*": operator.mul,
        "/": operator.truediv,
        "//": operator.floordiv,
        "%": operator.mod,
        "**": operator.pow,
    }
)


def _builtin_base(kind: type) -> type | None:
    """The type of ``_BASES`` that ``kind`` is or derives from, else None.

    Type identities are compared through ``id``, never hashed or compared with ``==``, which a
    metaclass of the solution could answer; ``issubclass`` against an exact built-in type reads the
    class's MRO (whose layout the interpreter has checked) and runs no code of the class.
    """
    for base in _BASES:
        if kind is base or issubclass(kind, base):
            return base
    return None


def _scalar(value: Any, base: type) -> object:
    """The exact ``int``/``float``/``complex``/``str``/``bytes`` that ``value``, an instance of
    ``base`` or of a subclass, holds, read by ``base``'s own method."""
    if base is int:
        return int.__index__(value)
    if base is float:
        return float.__float__(value)
    if base is complex:
        return complex.__pos__(value)
    if base is str:
        return str.__str__(value)
    return bytes.__getitem__(value, _EVERYTHING)


def _unfit(value: object) -> bool:
    return value is _FOREIGN or value is _TOO_BIG


def _canonical(value: Any, depth: int, budget: list[int]) -> Any:
    """A private copy of ``value`` in exact built-in types, else ``_FOREIGN`` or ``_TOO_BIG``.

    Atoms are their own copy. A subclass of a built-in type is read through its base type's methods,
    so the copy holds what the value really contains and none of its overrides runs. Lists, dicts
    and sets are copied even when exact, so that no thread of the solution can change them once
    checked; dict key and item views become sets. ``budget[0]`` counts down the items still allowed.
    """
    kind = type(value)
    if id(kind) in _ATOM_IDS:
        return value
    view = kind is _DICT_KEYS or kind is _DICT_ITEMS
    base = set if view else _builtin_base(kind)
    if base is None:
        return _FOREIGN
    if id(base) in _SCALAR_IDS:
        return _scalar(value, base)
    if depth >= _MAX_DEPTH:
        return _TOO_BIG
    if base is dict:
        keys = _canonical_items(list(dict.keys(value)), depth, budget)
        values = _canonical_items(list(dict.values(value)), depth, budget)
        if _unfit(keys) or _unfit(values):
            return values if _unfit(values) else keys
        # Two reads: a thread of the solution may change the dict between them, which can only
        # give another dict of built-in values.
        return _rebuilt(dict, zip(keys, values, strict=False), len(keys))
    if base is list or base is tuple:
        items = _canonical_items(base.__getitem__(value, _EVERYTHING), depth, budget)
        return items if _unfit(items) or base is list else tuple(items)
    members = list(value) if view else list(base.__iter__(value))  # type: ignore[attr-defined]
    items = _canonical_items(members, depth, budget)
    return items if _unfit(items) else _rebuilt(base, items, len(items))


def _canonical_items(items: Any, depth: int, budget: list[int]) -> Any:
    """The canonical copies of ``items`` (a private list, or an exact tuple), else the first
    ``_FOREIGN`` or ``_TOO_BIG`` among them."""
    budget[0] -= len(items)
    if budget[0] < 0:
        return _TOO_BIG
    if _ATOM_IDS.issuperset(map(id, map(type, items))):
        return items  # the common case, checked at C speed: nothing inside needs a copy
    copies = []
    for item in items:
        copy = _canonical(item, depth + 1, budget)
        if _unfit(copy):
            return copy
        copies.append(copy)
    return copies


def _rebuilt(make: Any, items: Any, size: int) -> Any:
    """``make(items)``, a dict or set of canonical copies; ``_FOREIGN`` when a member is unhashable or
    two members became one (the original kept equal values apart through a subclass's hashing)."""
    try:
        made = make(items)
    except TypeError:
        return _FOREIGN
    return made if len(made) == size else _FOREIGN


def _view(value: Any) -> Any:
    """``value``'s canonical copy (see :func:`_canonical`), else ``_FOREIGN`` or ``_TOO_BIG``.

    ``marshal`` makes the copy at C speed when it can: it writes exact built-in types only (and
    bytes-like objects, as the bytes they hold), runs no method of the values it writes, and refuses
    anything else, subclasses included, which then takes the slow road. Its version 2 has no
    references, so a cycle is refused too, as nested too deeply. The interpreter's own limits count
    as too big.
    """
    if id(type(value)) in _ATOM_IDS:
        return value
    try:
        return _LOADS(_DUMPS(value, 2))
    except Exception:
        pass
    try:
        return _canonical(value, 0, [_MAX_ITEMS])
    except (RecursionError, MemoryError):
        return _TOO_BIG


def _operands(left: object, right: object) -> tuple[Any, Any] | None:
    """What a comparison meets: canonical copies when both sides are made of built-in types; the
    values themselves when neither is (objects of the tests' own types, say); None when only one
    is, or either is too big to check: such a pair is never equal."""
    if id(type(left)) in _ATOM_IDS and id(type(right)) in _ATOM_IDS:
        return left, right  # the common case, without copies
    first, second = _view(left), _view(right)
    if first is _FOREIGN and second is _FOREIGN:
        return left, right
    if _unfit(first) or _unfit(second):
        return None
    return first, second


def _strict_eq(left: object, right: object) -> Any:
    """``left == right`` for the tests (see :func:`_operands`)."""
    pair = _operands(left, right)
    return pair is not None and pair[0] == pair[1]


def _strict_ne(left: object, right: object) -> Any:
    """``left != right`` for the tests (see :func:`_operands`)."""
    pair = _operands(left, right)
    return pair is None or pair[0] != pair[1]


def _ordered(symbol: str, left: object, right: object) -> tuple[Any, Any]:
    """The pair an ordering meets (see :func:`_operands`). It fails for a pair that is never equal,
    and for NaN, which is neither smaller nor larger than anything: ``not x > limit`` would pass."""
    pair = _operands(left, right)
    if pair is None:
        raise TypeError(
            f"'{symbol}' is not supported between a value of a built-in type and an object of another "
            "type, or a value too big to check"
        )
    for value in pair:
        if type(value) is float and value != value:
            raise ValueError(f"'{symbol}' with NaN, which has no order")
    return pair


def _strict_lt(left: object, right: object) -> Any:
    first, second = _ordered("<", left, right)
    return first < second


def _strict_le(left: object, right: object) -> Any:
    first, second = _ordered("<=", left, right)
    return first <= second


def _strict_gt(left: object, right: object) -> Any:
    first, second = _ordered(">", left, right)
    return first > second


def _strict_ge(left: object, right: object) -> Any:
    first, second = _ordered(">=", left, right)
    return first >= second


def _strict_is_in(needle: object, haystack: Any) -> bool:
    """``needle in haystack`` for the tests. A needle of built-in types is sought in a haystack of
    another type by iterating it and comparing each member strictly: its ``__contains__`` is not
    asked. A needle of another type is in no haystack of built-in types."""
    item, container = _view(needle), _view(haystack)
    if item is _TOO_BIG or container is _TOO_BIG:
        return False
    if container is _FOREIGN:
        return needle in haystack if item is _FOREIGN else _found(item, haystack)
    return item is not _FOREIGN and item in container


def _found(item: object, haystack: Any) -> bool:
    return any(_strict_eq(item, member) for member in haystack)


def _strict_not_in(needle: object, haystack: object) -> bool:
    return not _strict_is_in(needle, haystack)


def _strict_truth(value: Any) -> bool:
    """The truth of an asserted value, which must be of a built-in type: an object of another type
    could answer either way."""
    kind = type(value)
    if id(kind) in _TRUTH_IDS:
        return bool(value)
    base = _builtin_base(kind)
    if base is None:
        raise TypeError("the asserted value is not of a built-in type (bool, int, str, list, ...)")
    if id(base) in _SCALAR_IDS:
        return bool(_scalar(value, base))
    return base.__len__(value) > 0  # type: ignore[attr-defined]


def _strict_arith(symbol: str, left: Any, right: Any) -> Any:
    """``left <symbol> right`` for the tests. When one side is of an exact built-in type, the other
    must be of a built-in type too, a subclass counting as its base value: an object of another
    type could answer anything, such as a difference of zero from the expected value. Two values
    of other types meet as they are (two Fractions, a date and a timedelta)."""
    apply = _ARITHMETIC[symbol]
    left_exact, right_exact = id(type(left)) in _EXACT_IDS, id(type(right)) in _EXACT_IDS
    if left_exact is right_exact:
        return apply(left, right)
    if left_exact:
        if symbol == "%" and (type(left) is str or type(left) is bytes):
            return apply(left, right)  # formatting: it shows the object, and the text is checked
        return apply(left, _arithmetic_operand(symbol, right))
    return apply(_arithmetic_operand(symbol, left), right)


def _arithmetic_operand(symbol: str, value: Any) -> Any:
    """``value``, of a type other than the exact built-in ones, as its built-in base value."""
    base = _builtin_base(type(value))
    if base is None:
        raise TypeError(
            f"'{symbol}' is not supported between a value of a built-in type and an object of another type"
        )
    if id(base) in _SCALAR_IDS:
        return _scalar(value, base)
    if base is tuple:
        return tuple.__getitem__(value, _EVERYTHING)
    return base.copy(value)  # type: ignore[attr-defined]


def _strict_checks(builtins_: dict[str, Any]) -> types.SimpleNamespace:
    """The strict checks (``STRICT_CHECKS``) as attributes of one object, for the tests to call.

    They run while the solution's code may have rebound this module's names or the builtins
    (restored only after each step), so each function of this module is copied onto a snapshot of
    the module's globals whose builtins are ``builtins_``: what the checks look up is fixed before
    the solution runs. The snapshot is shallow, which is why the values the checks use are immutable.
    """
    module = globals()
    scope = dict(module)
    scope["__builtins__"] = builtins_
    for name, value in module.items():
        if type(value) is types.FunctionType and value.__globals__ is module:
            scope[name] = types.FunctionType(
                value.__code__, scope, name, value.__defaults__, value.__closure__
            )
    return types.SimpleNamespace(**{check: scope["_strict_" + check] for check in STRICT_CHECKS})


def _pinned(code: types.CodeType, checks: object) -> types.CodeType:
    """Compiled test code with each ``STRICT_CONSTANT`` constant, in nested functions too, replaced by
    ``checks``: a constant, which no namespace lookup stands in front of."""
    constants = tuple(
        _pinned(constant, checks)
        if type(constant) is types.CodeType
        else checks
        if type(constant) is str and constant == STRICT_CONSTANT
        else constant
        for constant in code.co_consts
    )
    return code.replace(co_consts=constants)


def main() -> None:
    """Read the payload, test the solution, write the report, exit."""
    import signal

    # Bind what is used after the solution runs: it may patch modules and builtins, not these locals.
    write, exit_now, set_timer, timer = os.write, os._exit, signal.setitimer, signal.ITIMER_REAL
    real_builtins = builtins.__dict__
    pristine = dict(real_builtins)
    checks = _strict_checks(dict(pristine))
    clear_builtins, update_builtins = real_builtins.clear, real_builtins.update
    text_of, describe, solution_line = _text, _describe, _solution_line
    compile_, exec_, repr_, str_, type_, dict_, list_ = compile, exec, repr, str, type, dict, list
    module_type, modules = types.ModuleType, sys.modules
    timeout_type, marker = StepTimeout, RESULT_MARKER
    allowed_thread: list[int | None] = [None]
    line_tools = (
        BaseException.__dict__["__traceback__"].__get__,
        str.__eq__,
        SOLUTION_FILE,
        allowed_thread,
        _thread.get_ident(),
    )
    report_fd = os.dup(1)

    payload = json.loads(sys.stdin.read())
    nonce: str = payload.pop("nonce")
    limit = int(payload["error_chars"])

    def plain(value: object) -> str:
        """``value`` if it is an exact ``str``: nothing else reaches the report's ``repr``."""
        return value if type_(value) is str_ else "<not text>"  # type: ignore[return-value]

    def new_module(name: str, builtins_: object, register: bool) -> dict[str, Any]:
        module = module_type(name)
        module.__dict__["__builtins__"] = builtins_
        if register:
            modules[name] = module
        return module.__dict__

    def evaluate() -> dict[str, Any]:
        step_limit = float(payload["step_time_limit_s"])
        entry_point = str_(payload["entry_point"])
        setup = _pinned(compile_(payload["test_setup"], "<test setup>", "exec"), checks)
        steps = [
            (_pinned(compile_(code, "<test>", "exec"), checks), bool(counted))
            for code, counted in payload["steps"]
        ]
        counted = sum(1 for _, is_test in steps if is_test)
        try:
            solution = compile_(payload.pop("solution"), SOLUTION_FILE, "exec")
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
            return _syntax_report(exc, limit)
        payload.clear()

        def run(code: Any, namespace: dict[str, Any]) -> tuple[bool, str, bool, int | None]:
            """Run ``code`` under the step alarm: (failed, error, timed out, line in the solution).

            Whether it failed comes from control flow alone, never from a value the solution made.
            """
            failed, timed_out, error, line = False, False, "", None
            caught: BaseException | None = None
            try:
                try:
                    set_timer(timer, step_limit)
                    exec_(code, namespace)
                finally:
                    set_timer(timer, 0)
            except timeout_type:
                failed = timed_out = True
            except BaseException as exc:
                failed, caught = True, exc
            if caught is not None:
                try:
                    try:
                        set_timer(timer, step_limit)  # its __str__ is the solution's code too
                        error = plain(describe(caught, limit))
                    finally:
                        set_timer(timer, 0)
                    line = solution_line(caught, line_tools)
                except BaseException:
                    error = error or "<unprintable error>"
            if timed_out:
                error = f"TimeoutError: took longer than {step_limit:g} s"
            clear_builtins()
            update_builtins(pristine)
            return failed, error, timed_out, line if type_(line) is int else None

        signal.signal(signal.SIGALRM, _on_alarm)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        sys.addaudithook(_make_guard(allowed_thread))

        # The solution's module is registered, as dataclasses and pickle look classes' modules up in
        # sys.modules; the tests' module is not, so that the solution cannot find it there.
        namespace = new_module("solution", builtins, True)
        failed, error, timed_out, line = run(solution, namespace)
        if failed:
            return {"stage": "load", "error": error, "line": line, "timed_out": timed_out}
        if entry_point not in namespace:
            missing = f"NameError: the code does not define {entry_point!r}"
            return {"stage": "tests", "results": [[False, missing, False, None]] * counted}

        tests = new_module("solution_tests", dict_(pristine), False)
        for name, value in list_(namespace.items()):
            if type_(name) is not str_ or name.startswith("__"):
                continue  # a str subclass key would run the solution's code on every lookup
            if name not in pristine or name == entry_point:
                tests[name] = value
        tests["candidate"] = namespace[entry_point]

        # After a set-up step fails or any step runs out of time, the remaining tests are not run;
        # they fail, and the first of them carries a set-up step's timeout so that it is not lost.
        results: list[list[Any]] = []
        skip_reason: str | None = None
        failed, error, timed_out, _ = run(setup, tests)
        if failed:
            skip_reason = f"not run: the test set-up failed: {error}"
        for code, is_test in steps:
            if skip_reason is not None:
                if is_test:
                    results.append([False, plain(text_of(skip_reason, limit)), timed_out, None])
                    timed_out = False
                continue
            failed, error, timed_out, line = run(code, tests)
            if is_test:
                results.append([not failed, error if failed else None, timed_out, line])
                if timed_out:
                    skip_reason, timed_out = "not run: an earlier test ran out of time", False
            elif failed:
                skip_reason = f"not run: a set-up statement before it failed: {error}"
        return {"stage": "tests", "results": results}

    try:
        report = evaluate()
    except BaseException as exc:
        report = {"stage": "harness", "error": plain(describe(exc, limit))}
    write(report_fd, f"\n{marker} {nonce} {repr_(report)}\n".encode("utf-8", "replace"))
    # Leave now: threads the solution started and its atexit hooks have nothing more to add.
    exit_now(0)


if __name__ == "__main__":
    main()
