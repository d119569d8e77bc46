"""The program the sandbox runs to test one solution. It is sent as source text and runs alone.

It imports nothing outside the standard library (the sandboxed interpreter sees no installed
packages) and runs on every Python the package supports.

Two processes, and only plain data between them. The verdict is computed where the solution's code
never runs:

- The **judge** is the process the sandbox starts. Before it reads anything of the task it forks
  the **solution process**, which keeps nothing of the judge's: its standard streams are
  ``/dev/null``, every other descriptor but its two pipe ends is closed, and its memory holds no
  byte of the tests (they were not read yet). The judge then reads the task from its stdin, sends
  the solution's source over the pipe, and runs the tests in its own namespace.
- The tests reach the solution through :class:`Remote` handles: calling one, reading an attribute,
  indexing, iterating, ``len`` and ``str`` become requests to the solution process, which answers
  with values. Values cross as tagged JSON (see "Values on the wire") made only of built-in data
  types, some standard-library value types and handles, and the judge decodes them into exact
  built-in objects of its own, so nothing the solution defines runs in the judge. An object of
  another type stays in the solution process and crosses as a handle. An operator between a handle
  and a value of the tests (``==``, ``<``, ``-``, ``in``, truth) runs in the judge on the handle's
  current value fetched as data; when that value is not data (an object of the solution's own
  class), it equals no value of the tests and has no order, arithmetic or truth, so an object that
  claims to equal anything passes nothing. Between two handles the solution answers (its class's
  own ``==``, as in ``Point(1, 2) == Point(1, 2)``).
- The judge is not dumpable (``PR_SET_DUMPABLE``; changing uid at start-up already made it so), so
  the solution process, though it runs as the same user, cannot open the judge's ``/proc`` entries
  (memory, descriptors, environment), and the sandbox's seccomp filter refuses ``ptrace`` and
  ``process_vm_*``. The solution process can end itself, corrupt its own pipe or send signals; each
  only fails its own tests. The judge's ``sys.path`` leaves out the scratch directory, so files the
  solution writes there are never imported by the tests.

Protocol with :mod:`mrlm.envs.code.execution`:

- stdin: one JSON object: ``nonce``, ``solution`` (source), ``entry_point``, ``test_setup``
  (source), ``steps`` (``[[source, counted], ...]``), ``step_time_limit_s``, ``error_chars`` and,
  optionally, ``compiled`` (the set-up and steps compiled by the caller: a marshalled list of code
  objects, in hex) with ``compiled_for`` (the ``sys.version`` of the interpreter that compiled them).
- stdout: one line ``RESULT_MARKER <nonce> <report>``, after which the judge closes its stdout and
  stderr (the sandbox answers then, see ``Sandbox.run``'s ``until_output_closed``), where ``<report>`` is the ``repr`` of a dict of
  plain ``str``/``int``/``bool``/``None``/``list`` values. Its ``"stage"`` says how far the run got:
  ``"syntax"`` (the solution does not compile: ``line``, ``column``, ``message``, ``text``),
  ``"load"`` (running the solution's top level failed: ``error``, ``line``, ``timed_out``),
  ``"tests"`` (``results``: one ``[passed, error, timed_out, line]`` per counted step) or
  ``"harness"`` (this program itself failed: ``error``). The nonce stays in the judge's memory; it
  guards the report line should anything else ever write to the judge's stdout.

What crosses by value is a copy: a test that changes a list after passing it to the solution does
not change the solution's copy. An argument the test builds from constants alone in the call
itself (``f(list(range(0, 10**6, 2)))``, ``f([7] * 1000)``) crosses as its expression, and the
solution's process builds it: the same value, at a fraction of the cost (see :func:`compile_tests`). Lists, dicts, sets and bytearrays passed as arguments come back
when the solution changed them, nested lists included, so tests see what it did to them in place. Other objects of the
tests (an iterator, a key function, an object of a test's class) cross as handles too, but the
solution may only call them, iterate them, take their length and index them: never read their
attributes, which would lead back to the tests' globals.

A NaN computed by the solution has no order and no arithmetic in the judge (it raises), so it
passes no ``not x > tolerance`` test; ``math.isnan`` still sees it.
"""

from __future__ import annotations
import __future__

import array
import ast
import builtins
import contextlib
import fcntl
import itertools
import json
import marshal
import math
import operator
import os
import select
import signal
import sys
import time
from typing import Any, NoReturn

#: This module's functions look their builtins up in a copy taken now (in the sandbox's worker,
#: which preloads this module, or before the solution's process exists): a solution that rebinds
#: ``builtins.isinstance`` changes its own code's builtins, not those of the code that answers for it.
__builtins__ = dict(vars(builtins))  # type: ignore[assignment]

RESULT_MARKER = "@@mrlm-code-result"
SOLUTION_FILE = "<solution>"
#: The longest message either process accepts from the other.
MAX_MESSAGE_BYTES = 32 << 20
#: Values nested deeper than this do not cross (nor does a cyclic one).
MAX_DEPTH = 200
#: Integers with more bits than this cross as hexadecimal text (json's decimal text is limited).
_BIG_INT_BITS = 4000
_HEADER = 8
_F_SETPIPE_SZ = 1031
#: How long a process waiting for the other's message polls its pipe before it sleeps on it. The
#: two processes take turns: most answers come within microseconds, and a sleeping reader woken
#: from another core costs tens of them per message (measured on 2 cores: 55 us a round trip
#: between sleeping readers, 4 us between polling ones).
_POLL_S = 50e-6


class StepTimeout(BaseException):
    """Raised by the alarm in a step that runs too long. A BaseException, so that ``except
    Exception`` in test code does not swallow it."""


class SolutionGone(Exception):
    """The solution process ended, or broke the protocol; nothing more can be asked of it."""


class RemoteError(Exception):
    """An exception of the solution that is not one of the built-in exceptions."""


def _on_alarm(signum: int, frame: object) -> None:
    raise StepTimeout


def _text(value: object, limit: int) -> str:
    """An exact ``str`` of at most ``limit`` characters."""
    text = value if type(value) is str else "<not text>"
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def _describe(error: BaseException, limit: int) -> str:
    """``"Name: message"`` for an exception."""
    try:
        message = str(error)
    except Exception:
        message = "<unprintable message>"
    name = type(error).__name__
    return _text(f"{name}: {message}" if message else name, limit)


# -- Messages ------------------------------------------------------------------------------------
# A message is an 8-byte big-endian length and an 8-byte count, that many bytes of JSON (ASCII: json
# escapes the rest, lone surrogates included), then the count of attachments, each an 8-byte length
# and raw bytes (packed lists of numbers, see _packed).


def _json_codecs() -> tuple[Any, Any]:
    """json's C encoder and scanner, bound now: they read no module global and no builtin, so a
    solution that patches the json module or the builtins changes neither. (The pure-Python
    fallbacks of interpreters without them are used as they are.)"""
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]

        def refuse(value: Any) -> Any:
            raise TypeError(f"{type(value).__name__} is not JSON")

        encoder = c_make_encoder(None, refuse, encode_basestring_ascii, None, ":", ",", False, False, True)
        scanner = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]

        def dumps(message: Any) -> str:
            return "".join(encoder(message, 0))

        def loads(text: str) -> Any:
            value, end = scanner(text, 0)
            if end != len(text):
                raise ValueError("extra data after the message")
            return value

        return dumps, loads
    except (ImportError, TypeError):
        return (lambda message: json.dumps(message, separators=(",", ":"))), json.loads


_dumps, _loads = _json_codecs()


def _send(fd: int, message: object, attachments: list[memoryview] | None = None) -> None:
    """Write one message; ``attachments`` are byte views (``len`` is their size in bytes)."""
    data = _dumps(message).encode("ascii")
    parts = [len(data).to_bytes(_HEADER, "big"), len(attachments or ()).to_bytes(_HEADER, "big"), data]
    for attachment in attachments or ():
        parts += [len(attachment).to_bytes(_HEADER, "big"), attachment]
    size = sum(map(len, parts))
    if size > MAX_MESSAGE_BYTES:
        raise ValueError(f"the value is too large to pass ({size} bytes)")
    # One system call for the whole message where the pipe takes it: each write wakes the reader,
    # which would otherwise run once per part only to find the message incomplete.
    written = os.writev(fd, parts)
    if written < size:
        view = memoryview(b"".join(parts))[written:]
        while view:
            view = view[os.write(fd, view) :]


def _receive(fd: int) -> tuple[Any, list[bytearray]]:
    """The next message and its attachments, or raise :class:`SolutionGone` at end of file or on a
    malformed or oversized one."""
    header = _read_exactly(fd, 2 * _HEADER)
    size, count = int.from_bytes(header[:_HEADER], "big"), int.from_bytes(header[_HEADER:], "big")
    if size > MAX_MESSAGE_BYTES or count > MAX_MESSAGE_BYTES:
        raise SolutionGone(f"the solution process sent a message of {size} bytes")
    data = _read_exactly(fd, size)
    attachments = []
    for _ in range(count):
        length = int.from_bytes(_read_exactly(fd, _HEADER), "big")
        size += length + _HEADER
        if size > MAX_MESSAGE_BYTES:
            raise SolutionGone(f"the solution process sent a message of over {size} bytes")
        attachments.append(_read_exactly(fd, length))
    try:
        return _loads(data.decode("ascii")), attachments
    except (ValueError, RecursionError, MemoryError, StopIteration) as error:
        raise SolutionGone(
            f"the solution process sent an unreadable message ({type(error).__name__})"
        ) from None


def _read_exactly(fd: int, size: int) -> bytearray:
    """``size`` bytes (callers bound it), read straight into one buffer: large values are not
    copied again to join their pieces."""
    buffer = bytearray(size)
    view, filled = memoryview(buffer), 0
    while filled < size:
        count = _read_into(fd, view[filled:])
        if not count:
            raise SolutionGone("the solution process ended")
        filled += count
    return buffer


def _read_into(fd: int, view: memoryview) -> int:
    """Read from the non-blocking pipe ``fd`` (see :func:`_start_solution_process`) into ``view``,
    polling it for :data:`_POLL_S` before sleeping until it is readable; the count read, 0 at end
    of file."""
    give_up = 0.0
    while True:
        try:
            return os.readv(fd, (view,))
        except BlockingIOError:
            pass
        now = time.perf_counter()
        if not give_up:
            give_up = now + _POLL_S
        elif now < give_up:
            os.sched_yield()  # the other process may be waiting for this core
        else:
            waiting = select.poll()
            waiting.register(fd, select.POLLIN)
            waiting.poll()


# -- Values on the wire --------------------------------------------------------------------------
# JSON null/true/false/numbers/strings/arrays are None/bool/int/float/str/list. Every JSON object is
# a tagged value {"$": tag, "v": ...}: a tuple, dict, set, frozenset, bytes, bytearray, complex,
# range, big int, Fraction, Decimal, date, time, datetime, timedelta, a long list of one number type
# in an attachment (see _packed), a test's argument to build from its expression ("built", from
# the judge only; see _Built), or a reference to an object that stays in the solution process
# ("h", with its type's name in "t").

_SEQUENCES = {"tuple": tuple, "set": set, "frozenset": frozenset}
#: Values json writes and reads as they are (a list of only these needs no walk; an int too large
#: for json's decimal text makes the message fail to encode, and the call with it).
_JSON_ATOMS = frozenset({type(None), bool, int, float, str})


class _Out:
    """What encoding one message needs: how to refer to what is not data (``reference(value,
    depth, out)``, which may raise), the message's attachments (None: none allowed), and whether
    its reader trusts its writer (the solution's process trusts the judge; see :func:`_packed`)."""

    __slots__ = ("attachments", "reference", "to_trusting")

    def __init__(
        self, reference: Any, attachments: list[memoryview] | None, to_trusting: bool = False
    ) -> None:
        self.reference, self.attachments, self.to_trusting = reference, attachments, to_trusting


class _In:
    """What decoding one message needs: how to make references (``resolve(tag, data)``), the
    message's attachments, whether its writer is trusted (the judge, read by the solution's
    process), and, filled while decoding, the ids of the lists that came packed (see
    :meth:`_Peer.snapshot`) and of the values built here from a test's expression (see
    :class:`_Built`)."""

    __slots__ = ("attachments", "built", "from_trusted", "resolve", "unpacked")

    def __init__(self, resolve: Any, attachments: list[bytearray], from_trusted: bool = False) -> None:
        self.resolve, self.attachments, self.from_trusted = resolve, attachments, from_trusted
        self.unpacked: set[int] = set()
        self.built: set[int] = set()


class _Built:
    """An argument of a test's call that the test builds from constants alone, such as
    ``list(range(0, 10**6, 2))`` or ``[7] * 1000`` (see :func:`compile_tests`): ``source`` is the
    expression, ``make()`` builds its value here, ``builders`` maps each name the expression calls
    to what that name held in the test when the call was made.

    Passed to the solution, it crosses as its expression and the solution's process builds the value
    (:func:`_built_value`): the expression holds constants and builders only (no name of the
    tests, nothing of the expected result), and a large argument is neither built nor written
    here, nor read there item by item. It stays a temporary of the test, which nothing here sees
    again, so it is never copied back. Passed to anything else (the tests' own functions), or where
    a name it calls held something else than the built-in (tests that rebound ``builtins.range``),
    it is built here first and crosses as its value."""

    __slots__ = ("builders", "make", "source")

    def __init__(self, source: str, make: Any, builders: dict[str, Any]) -> None:
        self.source, self.make, self.builders = source, make, builders

    def as_expression(self) -> bool:
        """Whether the solution's process builds the same value: every name calls the built-in."""
        return all(_BUILDERS.get(name) is value for name, value in self.builders.items())


#: The callables a built argument may use, with the built-in objects of those names, taken before
#: the solution's code runs (their behaviour cannot be changed: they are built-in types and
#: functions). Each keeps every item it is given, in order, so the expression shows the solution
#: nothing that the value would not (``sorted`` or ``set`` would show what they drop or reorder).
_BUILDERS = {name: getattr(builtins, name) for name in ("list", "range", "tuple", "reversed")}


def _built_value(source: str) -> Any:
    """In the solution's process: the value of a :class:`_Built` argument's expression."""
    code = compile(source, "<test argument>", "eval", dont_inherit=True)
    return eval(code, {"__builtins__": {}, **_BUILDERS})


def _encode(value: Any, out: _Out, depth: int = 0) -> Any:
    """``value`` as JSON-ready data; ``out.reference(value, depth, out)`` encodes what is not data."""
    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply (or contains itself)")
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        if value.bit_length() > _BIG_INT_BITS:
            return {"$": "int", "v": hex(value)}
        return value
    if kind is list:
        if len(value) >= _PACK_MIN:
            packed = _packed(value, out)
            if packed is not None:
                return packed
        types = set(map(type, value))
        if _plain(value, types):  # the common case, at C speed
            return value
        if types == {tuple}:
            cells = list(itertools.chain.from_iterable(value))
            if _plain(cells, set(map(type, cells))):
                return {"$": "rows", "v": value}  # tuples of plain values: json writes each as an array
        return [_encode(item, out, depth + 1) for item in value]
    if kind is tuple or kind is set or kind is frozenset:
        return {"$": kind.__name__, "v": [_encode(item, out, depth + 1) for item in value]}
    if kind is dict:
        pairs = [[_encode(k, out, depth + 1), _encode(v, out, depth + 1)] for k, v in value.items()]
        return {"$": "dict", "v": pairs}
    if kind is bytes or kind is bytearray:
        return {"$": kind.__name__, "v": value.hex()}
    if kind is complex:
        return {"$": "complex", "v": [value.real, value.imag]}
    if kind is range:
        return {"$": "range", "v": [value.start, value.stop, value.step]}
    if kind is _Built:  # a test's argument (see _Built): as its expression, to the solution's process
        if out.to_trusting and depth == 0 and value.as_expression():
            return {"$": "built", "v": value.source}
        return _encode(value.make(), out, depth)
    stdlib = _STDLIB_VALUE_TAGS.get((kind.__module__, kind.__qualname__))
    if stdlib is not None:
        return _encode_stdlib(stdlib, value, out)
    return out.reference(value, depth, out)


def _plain(items: list[Any], types: set[type]) -> bool:
    """Whether json writes ``items`` (whose types are ``types``) as they are: atoms only, and no
    int too long for json's decimal text."""
    if not _JSON_ATOMS.issuperset(types):
        return False
    return int not in types or all(item.bit_length() <= _BIG_INT_BITS for item in items if type(item) is int)


#: Lists of this many ints or floats, or more, cross packed: json's text is slow for them.
_PACK_MIN = 64
_PACK_CODES = {int: "q", float: "d"}
_count_of = operator.countOf


def _packed(value: list[Any], out: _Out) -> Any:
    """A list of only ints (that fit 64 bits) or only floats as machine words in an attachment,
    else None. To a reader that trusts this end, a list of ints that fit 32 bits or of floats is
    marshalled instead (:func:`_marshalled`): three times cheaper to write, as cheap to read."""
    kind = type(value[0])
    code = _PACK_CODES.get(kind)
    if code is not None and out.to_trusting and out.attachments is not None:
        marshalled = _marshalled(value, 5 if kind is int else 9, b"i" if kind is int else b"g")
        if marshalled is not None:
            out.attachments.append(memoryview(marshalled))
            return {"$": "marshal", "v": len(out.attachments) - 1}
    # Exact types only: array() would also take bools and int subclasses, and make ints of them.
    if code is None or out.attachments is None or _count_of(map(type, value), kind) != len(value):
        return None
    try:
        words = array.array(code, value)
    except OverflowError:
        return None
    out.attachments.append(memoryview(words).cast("B"))  # sent as it is, not copied to bytes
    return {"$": code, "v": len(out.attachments) - 1}


def _marshalled(value: list[Any], item_size: int, item_code: bytes) -> bytes | None:
    """``value`` marshalled (format 2: no shared references) when that holds exactly ``len(value)``
    items of the one type whose code is ``item_code`` and size ``item_size`` (``i``: an int of 32
    bits, ``g``: a float), else None. marshal refuses subclasses and writes bools apart, so every
    item is of the exact type; the items are read one after another from offset 5, so when each
    starts with the code and the length adds up, none is of another type. Only the judge writes
    this, and only the solution's process reads it: marshal is not for data from the untrusted."""
    try:
        data = marshal.dumps(value, 2)
    except ValueError:  # something in it is not data
        return None
    count = len(value)
    if len(data) != 5 + item_size * count or data[5::item_size].count(item_code) != count:
        return None
    return data


#: Standard-library value types that cross by value, by (module, name). Their modules are imported
#: only when such a value is met: importing them costs an execution more than the rest of it.
_STDLIB_VALUE_TAGS = {
    ("fractions", "Fraction"): "Fraction",
    ("decimal", "Decimal"): "Decimal",
    ("datetime", "date"): "date",
    ("datetime", "time"): "time",
    ("datetime", "datetime"): "datetime",
    ("datetime", "timedelta"): "timedelta",
}


def _encode_stdlib(tag: str, value: Any, out: _Out) -> Any:
    module = sys.modules.get(type(value).__module__)
    if module is None or type(value) is not getattr(module, tag, None):
        return out.reference(value, 0, out)  # a look-alike of the solution's: not the standard type
    if tag == "Fraction":
        return {"$": tag, "v": [_encode(value.numerator, out), _encode(value.denominator, out)]}
    if tag == "Decimal":
        return {"$": tag, "v": str(value)}
    if tag == "timedelta":
        return {"$": tag, "v": [value.days, value.seconds, value.microseconds]}
    if getattr(value, "tzinfo", None) is not None:
        return out.reference(value, 0, out)  # time zones are objects: it stays behind
    return {"$": tag, "v": value.isoformat()}


def _decode(data: Any, into: _In, depth: int = 0) -> Any:
    """The value ``data`` encodes, built from exact types; ``into.resolve(tag, data)`` makes
    references (and a NaN, with tag ``"nan"``).

    Raises ValueError on anything :func:`_encode` does not write.
    """
    if depth > MAX_DEPTH:
        raise ValueError("a value nested too deeply")
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is str:
        return data
    if kind is float:
        return data if data == data else into.resolve("nan", data)
    if kind is list:
        types = set(map(type, data))
        if _JSON_ATOMS.issuperset(types) and (float not in types or all(item == item for item in data)):
            return data  # atoms only and no NaN: json made this list, and it is ours alone
        return [_decode(item, into, depth + 1) for item in data]
    if kind is not dict or len(data) < 2 or type(data.get("$")) is not str:
        raise ValueError("an untagged object")
    tag, raw = data["$"], data.get("v")
    if tag in _SEQUENCES:
        return _SEQUENCES[tag](_decode(item, into, depth + 1) for item in _listed(raw))
    if tag == "dict":
        return {
            _decode(pair[0], into, depth + 1): _decode(pair[1], into, depth + 1)
            for pair in _listed(raw)
            if type(pair) is list and len(pair) == 2
        }
    if tag == "marshal" and into.from_trusted:  # see _packed
        index = _integer(raw)
        if not 0 <= index < len(into.attachments):
            raise ValueError("a malformed packed list")
        items = marshal.loads(into.attachments[index])
        if type(items) is not list:
            raise ValueError("a malformed packed list")
        into.unpacked.add(id(items))
        return items
    if tag == "built" and into.from_trusted and depth == 0:  # see _Built
        value = _built_value(_string(raw))
        into.built.add(id(value))
        return value
    if tag == "q" or tag == "d":  # see _packed
        index = _integer(raw)
        if not 0 <= index < len(into.attachments):
            raise ValueError("a malformed packed list")
        try:  # read in place: no copy into an array first
            items = memoryview(into.attachments[index]).cast(tag).tolist()
        except TypeError:  # not a whole number of words
            raise ValueError("a malformed packed list") from None
        if tag == "d" and any(item != item for item in items):
            items = [item if item == item else into.resolve("nan", item) for item in items]
        into.unpacked.add(id(items))
        return items
    if tag == "rows":  # see _encode: a list of tuples of plain values
        rows = _listed(raw)
        if {list}.issuperset(map(type, rows)):
            kinds = set(map(type, itertools.chain.from_iterable(rows)))
            nan = float in kinds and any(item != item for item in itertools.chain.from_iterable(rows))
            if _JSON_ATOMS.issuperset(kinds) and not nan:
                return list(map(tuple, rows))
        return [tuple(_decode(item, into, depth + 2) for item in _listed(row)) for row in rows]
    if tag == "int":
        return int(_string(raw), 16)
    if tag == "bytes":
        return bytes.fromhex(_string(raw))
    if tag == "bytearray":
        return bytearray.fromhex(_string(raw))
    if tag == "complex":
        real, imag = (_number(part) for part in _listed(raw, 2))
        if real != real or imag != imag:  # abs() of it would be a plain NaN
            return into.resolve("nan-complex", [real, imag])
        return complex(real, imag)
    if tag == "range":
        return range(*(_integer(item) for item in _listed(raw, 3)))
    if tag == "Fraction":
        import fractions

        numerator, denominator = _listed(raw, 2)
        return fractions.Fraction(_integer_value(numerator), _integer_value(denominator))
    if tag == "Decimal":
        import decimal

        number = decimal.Decimal(_string(raw))
        # In the judge, a NaN is a NaN whatever its type: float() or math.fabs() of it is plain.
        return into.resolve("nan-decimal", number) if number.is_nan() else number
    if tag in ("date", "time", "datetime", "timedelta"):
        import datetime

        if tag == "timedelta":
            days, seconds, microseconds = (_integer(item) for item in _listed(raw, 3))
            return datetime.timedelta(days, seconds, microseconds)
        return getattr(datetime, tag).fromisoformat(_string(raw))
    return into.resolve(tag, data)


def _listed(raw: object, length: int | None = None) -> list[Any]:
    if type(raw) is not list or (length is not None and len(raw) != length):
        raise ValueError("a malformed tagged value")
    return raw


def _string(raw: object) -> str:
    if type(raw) is not str:
        raise ValueError("a malformed tagged value")
    return raw


def _integer(raw: object) -> int:
    if type(raw) is not int:
        raise ValueError("a malformed tagged value")
    return raw


def _integer_value(raw: object) -> int:
    if type(raw) is dict and raw.get("$") == "int":
        return int(_string(raw.get("v")), 16)
    return _integer(raw)


def _number(raw: object) -> float:
    if type(raw) is not int and type(raw) is not float:
        raise ValueError("a malformed tagged value")
    return raw


# -- Objects that stay on their side -------------------------------------------------------------

#: Built-in data types whose subclasses cross as the value of the base type.
_BUILTIN_BASES = (bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset)
_MUTABLE = (list, dict, set, bytearray)
#: Operations whose list, dict, set or bytearray result crosses as a handle, not a copy: a test that
#: writes ``board.cells[key] = value`` changes the object's own dict, as it would in one process.
_LIVE_RESULTS = frozenset({"getattr", "getitem"})
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_MODULE = type(sys)
#: A top-level collection of the solution with more items than this crosses as a handle.
_MAX_NAME_ITEMS = 10_000


def _as_base_value(value: Any) -> Any:
    """The built-in value inside an instance of a subclass of a built-in data type (a namedtuple,
    an OrderedDict, a str subclass), read by the base type's own code so that no override runs;
    None for an object of any other type."""
    kind = type(value)
    base: Any = next((base for base in _BUILTIN_BASES if issubclass(kind, base)), None)
    if base is None or base is bool:
        return None
    if base is int:
        return int.__index__(value)
    if base is float:
        return float.__float__(value)
    if base is complex:
        return complex.__pos__(value)
    if base is str:
        return str.__str__(value)
    if base is bytes or base is bytearray:
        return base(memoryview(value))
    if base is dict:
        return dict(dict.items(value))
    return base(base.__iter__(value))


#: What the solution's process does for the judge, on its objects (``call`` and ``load`` apart).
_SOLUTION_OPERATIONS: dict[str, Any] = {
    "value": lambda target: target,
    "getattr": getattr,
    "setattr": setattr,
    "delattr": delattr,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "len": len,
    "iter": iter,
    "next": next,
    "str": str,
    "hash": hash,
    "isinstance": lambda target, value: isinstance(value, target),
    "contains": operator.contains,
    **{name: getattr(operator, name) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{name: getattr(operator, name) for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")},
}
#: What the judge does for the solution, on the objects of the tests passed to it: use them, never
#: read their attributes (a function's globals are the tests' namespace).
_JUDGE_OPERATIONS: dict[str, Any] = {
    "getitem": operator.getitem,
    "len": len,
    "iter": iter,
    "next": next,
    "contains": operator.contains,
}

#: Callables of the tests that are never handed to the solution: called by it in the judge, they
#: would reach the judge's objects and globals or run code there.
_NOT_LENT = tuple(
    getattr(builtins, name)
    for name in (
        "getattr",
        "setattr",
        "delattr",
        "eval",
        "exec",
        "compile",
        "globals",
        "locals",
        "vars",
        "open",
        "__import__",
        "breakpoint",
        "input",
        "dir",
        "type",
        "object",
        "super",
        "help",
    )
    if hasattr(builtins, name)
)

#: The built-in exceptions a remote exception may become, by name; any other is a RemoteError.
_EXCEPTIONS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception) and not issubclass(value, StopIteration)
}


class _Peer:
    """One end of the exchange between the judge and the solution's process.

    Messages are lists. A request is ``["q", operation, handle, args, kwargs]`` on an object the
    other end exported (handle 0 and ``"load"``: load the solution); the answer is ``["ok", value,
    copied back arguments]``, ``["stop"]`` (the iterator is exhausted), ``["raise", type name,
    message, line, args]`` or, to ``load``, ``["syntax", line, column, message, text]``. While an end
    waits for its answer it serves the other end's requests, so that a call of the solution can
    iterate an iterator of the tests, which can call the solution again.

    Args:
        read_fd, write_fd: the pipe ends.
        operations: what this end does on its own objects for the other end.
        proxy: the class of the local stand-ins of the other end's objects.
        judge: True in the judge (a NaN becomes :class:`SolutionNaN`; a broken exchange ends the
            solution's process), False in the solution's process.
    """

    def __init__(
        self, read_fd: int, write_fd: int, operations: dict[str, Any], proxy: type, judge: bool
    ) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.operations, self.proxy, self.judge = operations, proxy, judge
        self.objects: dict[int, Any] = {}  # handle -> own object, kept alive so handles stay unique
        self.handles: dict[int, int] = {}  # id(own object) -> handle
        self.proxies: dict[int, Any] = {}  # the other end's handle -> its stand-in here
        self.kinds: dict[type, int] = {}  # a number for the type of each object exported
        #: (type number, name) of the other end's attributes that were methods (see Remote).
        self.methods: set[tuple[int, str]] = set()
        self.gone: str | None = None
        self.pid = 0
        self.incoming = _In(self._resolve, [])  # the message received last
        self.loader: Any = None

    # -- values
    def out(self) -> _Out:
        """The encoding context of a new message."""
        return _Out(self._reference, [], to_trusting=self.judge)

    def decode(self, data: Any) -> Any:
        """A value of the message received last."""
        return _decode(data, self.incoming)

    def snapshot(self, value: Any, came_in: _In) -> Any:
        """What ``value`` (a list, dict, set or bytearray received in ``came_in``) holds now, in a
        form that later changes to it, or to anything inside it, leave alone: a shallow copy of a
        list that came packed (it holds only numbers, which nothing can change), else the text and
        attachments of its encoding (the encoding itself would share its inner lists)."""
        if id(value) in came_in.unpacked:
            return ("packed", list(value))
        out = self.out()
        return (_dumps(_encode(value, out)), out.attachments)

    def unchanged(self, value: Any, before: Any) -> bool:
        """Whether ``value`` still holds what :meth:`snapshot` saw."""
        if before[0] == "packed":
            return type(value) is list and value == before[1]
        out = self.out()
        return (_dumps(_encode(value, out)), out.attachments) == before

    def export(self, value: Any) -> dict[str, Any]:
        """A handle on ``value``, which stays here, for the other end to use."""
        if self.judge and any(value is power for power in _NOT_LENT):
            raise TypeError(f"{_text(getattr(value, '__name__', '?'), 100)} cannot be passed to the solution")
        handle = self.handles.get(id(value))
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle], self.handles[id(value)] = value, handle
        kind = self.kinds.setdefault(type(value), len(self.kinds) + 1)
        return {"$": "h", "v": handle, "t": _text(type(value).__name__, 100), "k": kind}

    def _reference(self, value: Any, depth: int, out: _Out) -> Any:
        if type(value) is self.proxy:
            return {"$": "r", "v": object.__getattribute__(value, "_handle")}
        if type(value) is SolutionNaN:
            return math.nan
        if type(value) is SolutionComplexNaN:
            return {"$": "complex", "v": [value.parts()[0], value.parts()[1]]}
        copied = _as_base_value(value)
        return self.export(value) if copied is None else _encode(copied, out, depth)

    def _resolve(self, tag: str, data: Any) -> Any:
        if tag in _NAN_TAGS:
            return _solution_nan(tag, data) if self.judge else _plain_nan(tag, data)
        if tag == "m":
            return _CLASS_METHOD if data.get("v") == 1 else _METHOD
        handle = data.get("v")
        if type(handle) is not int:
            raise ValueError("a malformed reference")
        if tag == "r":  # one of ours, coming back
            return self.objects[handle]
        if tag != "h":
            raise ValueError(f"an unknown tag {tag!r}")
        stand_in = self.proxies.get(handle)
        if stand_in is None:
            kind = data.get("k") if type(data.get("k")) is int else None
            stand_in = self.proxies[handle] = self.proxy(self, handle, _text(data.get("t"), 100), kind)
        return stand_in

    # -- exchanges
    def ask(self, operation: str, handle: int, args: Any, kwargs: Any = None) -> list[Any]:
        """Send a request and wait for its answer, serving the other end's requests meanwhile."""
        self.send_request(operation, handle, args, kwargs)
        return self.answer()

    def send_request(self, operation: str, handle: int, args: Any, kwargs: Any = None) -> None:
        if self.gone is not None:
            raise SolutionGone(self.gone)
        out = self.out()
        encoded_args = [_encode(arg, out) for arg in args]
        encoded_kwargs = {str(key): _encode(value, out) for key, value in (kwargs or {}).items()}
        try:
            _send(self.write_fd, ["q", operation, handle, encoded_args, encoded_kwargs], out.attachments)
        except ValueError:
            raise  # too large: nothing was written, the exchange is still in step
        except BaseException as error:
            self._broken(error)

    def answer(self) -> list[Any]:
        """The answer to the request sent last, serving the other end's requests meanwhile."""
        while True:
            try:
                message, attachments = _receive(self.read_fd)
            except BaseException as error:
                self._broken(error)
            self.incoming = _In(self._resolve, attachments, from_trusted=not self.judge)
            if type(message) is not list or not message or type(message[0]) is not str:
                self._broken(SolutionGone("the other side broke the protocol"))
            if message[0] != "q":
                return message
            self.serve(message)

    def value(self, operation: str, handle: int, *args: Any) -> Any:
        """The value the other end answers an operation with; its exception is raised here."""
        return self.result(self.ask(operation, handle, args))

    def result(self, answer: list[Any]) -> Any:
        if answer[0] == "ok" and len(answer) >= 2:
            return self._decoded(answer[1])
        if answer[0] == "raise" and len(answer) == 5:
            raise self.exception(answer[1:])
        if answer[0] == "stop":
            raise StopIteration
        self._broken(SolutionGone("the other side broke the protocol"))

    def serve(self, request: list[Any]) -> None:
        """Answer one request of the other end (the message received last)."""
        out = self.out()
        try:
            answer = self._answer(request, out)
        except BaseException as error:
            if isinstance(error, StepTimeout):
                raise
            answer, out = ["raise", *_exception_fields(error)], self.out()
        try:
            _send(self.write_fd, answer, out.attachments)
        except ValueError as error:  # too large: say so instead
            _send(self.write_fd, ["raise", "ValueError", str(error), None, None])

    def _answer(self, request: list[Any], out: _Out) -> list[Any]:
        if len(request) != 5 or type(request[3]) is not list or type(request[4]) is not dict:
            raise ValueError("a malformed request")
        _, operation, handle, raw_args, raw_kwargs = request
        if operation == "load" and self.loader is not None:
            return self.loader(raw_args[0], out)
        came_in = self.incoming
        target = self.objects[handle]
        args = [self.decode(item) for item in raw_args]
        if operation == "call_method" and not self.judge:  # the judge's objects lend no attributes
            if not args or type(args[0]) is not str:
                raise ValueError("a malformed method call")
            target, operation = getattr(target, args.pop(0)), "call"  # what the name holds now
        if operation == "call":
            kwargs = {key: self.decode(value) for key, value in raw_kwargs.items()}
            passed: list[tuple[Any, Any]] = [] if self.judge else [*enumerate(args), *kwargs.items()]
            mutable = [
                (key, arg, self.snapshot(arg, came_in))
                for key, arg in passed
                if type(arg) in _MUTABLE and id(arg) not in came_in.built  # see _Built
            ]
            result = target(*args, **kwargs)
            changed = [
                [key, _encode(arg, out)] for key, arg, before in mutable if not self.unchanged(arg, before)
            ]  # what the solution changed in place, the tests see changed too
            return ["ok", _encode(result, out), changed]
        if operation == "next":
            try:
                result = next(target)
            except StopIteration:
                return ["stop"]
        else:
            result = self.operations[operation](target, *args)
        if operation == "getattr" and getattr(result, "__self__", None) is target and callable(result):
            # A method of the object: the judge calls it by name, and where the method comes from
            # the object's class (not the object itself, a class or a module), it need not ask
            # again for other objects of that class.
            of_class = not isinstance(target, (type, _MODULE)) and args[0] not in getattr(
                target, "__dict__", {}
            )
            return ["ok", {"$": "m", "v": 1 if of_class else 0}]
        if operation in _LIVE_RESULTS and isinstance(result, _MUTABLE):
            return ["ok", self.export(result)]  # the tests may change it in place: it stays here
        return ["ok", _encode(result, out)]

    def exception(self, fields: list[Any]) -> BaseException:
        """The other end's exception as a built-in exception here (or a :class:`RemoteError` naming
        its type); ``solution_line`` says where in the solution it was raised."""
        name, message, line, args = fields
        kind = _EXCEPTIONS.get(name) if type(name) is str else None
        text = message if type(message) is str else ""
        error: BaseException | None = None
        if kind is not None:
            try:
                decoded = _decode(args, _In(_no_references, [])) if args is not None else (text,)
                error = kind(*decoded) if type(decoded) is tuple else kind(text)
            except Exception:
                error = None
        if error is None:
            error = RemoteError(f"{_text(name, 100)}: {text}")
        error.solution_line = line if type(line) is int else None  # type: ignore[attr-defined]
        return error

    def end(self, reason: str) -> None:
        """Stop exchanging; in the judge, kill the solution's process."""
        if self.gone is None:
            self.gone = reason
            if self.pid:
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)

    def _decoded(self, data: Any) -> Any:
        try:
            return self.decode(data)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError, OverflowError) as error:
            self._broken(SolutionGone(f"the other side sent a malformed value ({type(error).__name__})"))

    def _broken(self, error: BaseException) -> NoReturn:
        if not self.judge:
            os._exit(0)  # the judge is gone or broke the protocol: nothing to answer
        if isinstance(error, StepTimeout):
            self.end("a test ran out of time")  # an answer may still be on its way: stop here
            raise error
        reason = (
            str(error) if isinstance(error, SolutionGone) else f"the exchange failed ({type(error).__name__})"
        )
        self.end(reason)
        raise SolutionGone(self.gone)


def _no_references(tag: str, data: Any) -> Any:
    if tag in _NAN_TAGS:
        return _plain_nan(tag, data)
    raise ValueError("an exception's arguments hold no objects")


#: The tags :func:`_decode` resolves a NaN with: a float's, a complex number's with a NaN part
#: (data: ``[real, imag]``), a Decimal's (data: the Decimal).
_NAN_TAGS = frozenset({"nan", "nan-complex", "nan-decimal"})


def _plain_nan(tag: str, data: Any) -> Any:
    """The NaN value as it was sent (in the solution's process, or in an exception's arguments)."""
    return complex(*data) if tag == "nan-complex" else data


def _solution_nan(tag: str, data: Any) -> Any:
    """A NaN of the solution's, in the judge: one that passes no comparison and takes no arithmetic."""
    return SolutionComplexNaN(*data) if tag == "nan-complex" else SolutionNaN()


def _exception_fields(error: BaseException) -> list[Any]:
    """The exception's type name, message, the line of the solution it was raised from, and its
    arguments when they are data (so that ``KeyError('x')`` becomes ``KeyError('x')`` again)."""
    try:
        message = str(error)
    except BaseException:
        message = "<unprintable message>"
    line = None
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == SOLUTION_FILE:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    try:
        args = _encode(error.args, _Out(_refuse, None))
    except BaseException:
        args = None
    return [_text(type(error).__name__, 100), _text(message, 2000), line, args]


def _refuse(value: Any, depth: int, out: _Out) -> Any:
    raise ValueError("not data")


class SolutionNaN(float):
    """A NaN the solution computed, in the judge: it equals nothing and has no order and no
    arithmetic, so that ``not abs(f(x) - y) > tolerance`` fails rather than passes."""

    def __new__(cls, value: float = math.nan) -> SolutionNaN:
        return super().__new__(cls, math.nan)

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return "nan"

    def _refused(self, *args: Any) -> Any:
        raise ValueError("a NaN returned by the solution has no order and no arithmetic")

    __lt__ = __le__ = __gt__ = __ge__ = _refused
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refused
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _refused
    __mod__ = __rmod__ = __pow__ = __rpow__ = __abs__ = __neg__ = __pos__ = _refused
    __round__ = __int__ = __trunc__ = __floor__ = __ceil__ = _refused
    # float() and complex() of it would be a plain NaN (math.isnan reads the value, not these).
    __float__ = __complex__ = _refused


class SolutionComplexNaN(complex):
    """A complex number with a NaN part that the solution computed, in the judge: as
    :class:`SolutionNaN`, it equals nothing and takes no arithmetic, and its ``abs()`` and its
    NaN parts are :class:`SolutionNaN`, so that ``not abs(f(x) - y) > tolerance`` fails."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = complex.__hash__

    def parts(self) -> tuple[float, float]:
        """The real and imaginary parts as plain floats (for sending back)."""
        return complex.real.__get__(self), complex.imag.__get__(self)

    @property
    def real(self) -> float:
        part = self.parts()[0]
        return SolutionNaN() if part != part else part

    @property
    def imag(self) -> float:
        part = self.parts()[1]
        return SolutionNaN() if part != part else part

    def __abs__(self) -> float:
        return SolutionNaN()

    def _refused(self, *args: Any) -> Any:
        raise ValueError("a NaN returned by the solution has no arithmetic")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refused
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __pos__ = __complex__ = _refused


# -- The solution's process ----------------------------------------------------------------------


def _start_solution_process() -> tuple[int, int, int]:
    """Fork the solution's process; returns its pid and the judge's pipe ends (from it, to it).

    Called before the judge has read anything of the task, so the child's memory holds none of it.
    """
    to_child_read, to_child_write = os.pipe()
    from_child_read, from_child_write = os.pipe()
    for fd in (to_child_write, from_child_write):
        with contextlib.suppress(OSError):  # fewer switches between the processes for large values
            fcntl.fcntl(fd, _F_SETPIPE_SZ, 1 << 20)
    for fd in (to_child_read, from_child_read):
        os.set_blocking(fd, False)  # each end polls before it sleeps (see _read_into)
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):
                os.dup2(null, target)
            os.dup2(to_child_read, 3)
            os.dup2(from_child_write, 4)
            os.closerange(5, 1 << 16)  # the judge's stdin and every other descriptor
            _serve_solution(3, 4)
        finally:
            os._exit(70)
    os.close(to_child_read)
    os.close(from_child_write)
    return pid, from_child_read, to_child_write


def _serve_solution(read_fd: int, write_fd: int) -> NoReturn:
    """The solution's process: answer the judge's requests until it closes the pipe.

    Everything here is as untrusted as the solution, which runs in this process: what it answers
    is what the judge gets, and the judge checks nothing of it but the form. (This module's private
    builtins and json's C codecs keep a solution that patches the builtins or json from breaking
    its own answers.)
    """
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    peer = _Peer(read_fd, write_fd, _SOLUTION_OPERATIONS, _Borrowed, judge=False)

    def load(source: Any, out: _Out) -> list[Any]:
        if type(source) is not str:
            raise ValueError("the solution must be text")
        try:
            code = compile(source, SOLUTION_FILE, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as error:
            return ["syntax", *_syntax_fields(error)]
        module = type(sys)("solution")
        module.__dict__["__builtins__"] = builtins
        sys.modules["solution"] = module  # dataclasses and pickle look classes' modules up there
        exec(code, module.__dict__)
        names = []
        for name, value in list(module.__dict__.items()):
            if type(name) is not str or name.startswith("__"):
                continue
            try:
                live = isinstance(value, _MUTABLE) or (
                    isinstance(value, _SIZED) and len(value) > _MAX_NAME_ITEMS
                )
                names.append([name, peer.export(value) if live else _encode(value, out)])
            except Exception:
                continue  # too deep, or a broken object: the tests cannot use it
        return ["ok", names, []]

    peer.loader = load
    while True:
        try:
            request, attachments = _receive(read_fd)
        except BaseException:
            os._exit(0)
        if type(request) is not list or not request or request[0] != "q":
            os._exit(0)
        peer.incoming = _In(peer._resolve, attachments, from_trusted=True)
        peer.serve(request)


def _syntax_fields(error: BaseException) -> list[Any]:
    line, column = getattr(error, "lineno", None), getattr(error, "offset", None)
    text, message = getattr(error, "text", None), getattr(error, "msg", None)
    return [
        line if type(line) is int else None,
        column if type(column) is int else None,
        message if type(message) is str else _describe(error, 1000),
        text.rstrip("\n") if type(text) is str else None,
    ]


class _Borrowed:
    """An object of the tests, seen from the solution's process: it can be called, iterated,
    measured and indexed."""

    __slots__ = ("_handle", "_peer", "_type")

    def __init__(self, peer: _Peer, handle: int, type_name: str, kind: int | None = None) -> None:
        self._peer, self._handle, self._type = peer, handle, type_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._peer.result(self._peer.ask("call", self._handle, args, kwargs))

    def __iter__(self) -> Any:
        iterator = self._peer.value("iter", self._handle)
        return iterator if type(iterator) is _Borrowed else iter(iterator)

    def __next__(self) -> Any:
        return self._peer.value("next", self._handle)

    def __len__(self) -> int:
        return self._peer.value("len", self._handle)

    def __getitem__(self, key: Any) -> Any:
        return self._peer.value("getitem", self._handle, key)

    def __contains__(self, item: Any) -> bool:
        return self._peer.value("contains", self._handle, item) is True

    def __repr__(self) -> str:
        return f"<{self._type} object of the tests>"


# -- The judge -----------------------------------------------------------------------------------


def _operator(operation: str, symbol: str, apply: Any, reflected: bool = False) -> Any:
    """A comparison or arithmetic operator of :class:`Remote`.

    Between two objects of the solution, the solution answers. With a value of the tests on the
    other side, the object's current value is fetched as data and the operator runs here, on values
    the judge built; an object that is not data (a class of the solution's) equals no value of the
    tests and has no order or arithmetic with them, since it would be the judge of that value.
    """

    def method(self: Remote, other: Any) -> Any:
        if type(other) is Remote:
            if operation == "eq" and other is self:
                return True
            left, right = (other, self) if reflected else (self, other)
            return left._ask(operation, right)
        value = self._value()
        if type(value) is Remote:
            if operation in ("eq", "ne"):
                return operation == "ne"
            raise TypeError(
                f"'{symbol}' between an object of the solution ({object.__getattribute__(self, '_type')}) "
                "and a value of the tests is not supported: the solution must return built-in values"
            )
        return apply(other, value) if reflected else apply(value, other)

    return method


def _forward(operation: str) -> Any:
    def method(self: Remote, *args: Any) -> Any:
        return self._ask(operation, *args)

    method.__name__ = f"__{operation}__"
    return method


class Remote:
    """An object that lives in the solution's process, seen from the judge.

    Calls, attribute access, indexing, iteration, ``len``, ``str``, ``hash`` and ``isinstance``
    are answered by the solution's process, as are operators between two of its objects. With a
    value of the tests, operators and truth use the object's value fetched as data (see
    :func:`_operator`): a list attribute compares as the list it holds now.
    """

    __slots__ = ("_handle", "_kind", "_peer", "_type")

    def __init__(self, peer: _Peer, handle: int, type_name: str, kind: int | None = None) -> None:
        object.__setattr__(self, "_peer", peer)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_kind", kind)

    def _ask(self, operation: str, *args: Any) -> Any:
        peer: _Peer = object.__getattribute__(self, "_peer")
        return peer.value(operation, object.__getattribute__(self, "_handle"), *args)

    def _value(self) -> Any:
        """The object's current value as data, or a Remote when it is not data."""
        return self._ask("value")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self, "call", (), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # protocols the tests' libraries probe for stay local
        peer: _Peer = object.__getattribute__(self, "_peer")
        kind = object.__getattribute__(self, "_kind")
        if (kind, name) in peer.methods:  # a method of its type: no need to ask again
            return _Method(self, name)
        value = self._ask("getattr", name)
        if value is _CLASS_METHOD and kind is not None:
            peer.methods.add((kind, name))
        return _Method(self, name) if value is _METHOD or value is _CLASS_METHOD else value

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_peer").methods.discard((object.__getattribute__(self, "_kind"), name))
        self._ask("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        object.__getattribute__(self, "_peer").methods.discard((object.__getattribute__(self, "_kind"), name))
        self._ask("delattr", name)

    def __iter__(self) -> Any:
        iterator = self._ask("iter")
        return iterator if type(iterator) is Remote else iter(iterator)

    def __next__(self) -> Any:
        return self._ask("next")

    def __bool__(self) -> bool:
        value = self._value()
        if type(value) is Remote:
            raise TypeError(
                "the asserted value is not of a built-in type (bool, int, str, list, ...): an object of "
                f"the solution ({object.__getattribute__(self, '_type')}) has no truth value here"
            )
        return bool(value)

    def __hash__(self) -> int:
        return hash(("mrlm-remote", object.__getattribute__(self, "_handle")))

    def __repr__(self) -> str:
        placeholder = f"<{object.__getattribute__(self, '_type')} object of the solution>"
        try:
            value = self._value()
        except Exception:
            return placeholder
        return placeholder if type(value) is Remote else repr(value)

    def __str__(self) -> str:
        text = self._ask("str")
        if type(text) is not str:
            raise TypeError("__str__ returned non-string")
        return text

    def __len__(self) -> int:
        size = self._ask("len")
        if type(size) is not int or size < 0:
            raise TypeError("__len__ returned a value that is not a length")
        return size

    def __instancecheck__(self, instance: Any) -> bool:
        return self._ask("isinstance", instance) is True

    def __contains__(self, item: Any) -> bool:
        if type(item) is Remote:
            return self._ask("contains", item) is True
        value = self._value()
        if type(value) is Remote:
            raise TypeError(
                "'in' with an object of the solution as the container is supported only for its own "
                "objects: the solution must return built-in values"
            )
        return item in value

    __getitem__ = _forward("getitem")
    __setitem__ = _forward("setitem")
    __delitem__ = _forward("delitem")
    __eq__ = _operator("eq", "==", operator.eq)
    __ne__ = _operator("ne", "!=", operator.ne)
    __lt__ = _operator("lt", "<", operator.lt)
    __le__ = _operator("le", "<=", operator.le)
    __gt__ = _operator("gt", ">", operator.gt)
    __ge__ = _operator("ge", ">=", operator.ge)
    __add__ = _operator("add", "+", operator.add)
    __sub__ = _operator("sub", "-", operator.sub)
    __mul__ = _operator("mul", "*", operator.mul)
    __truediv__ = _operator("truediv", "/", operator.truediv)
    __floordiv__ = _operator("floordiv", "//", operator.floordiv)
    __mod__ = _operator("mod", "%", operator.mod)
    __pow__ = _operator("pow", "**", operator.pow)
    __radd__ = _operator("add", "+", operator.add, reflected=True)
    __rsub__ = _operator("sub", "-", operator.sub, reflected=True)
    __rmul__ = _operator("mul", "*", operator.mul, reflected=True)
    __rtruediv__ = _operator("truediv", "/", operator.truediv, reflected=True)
    __rfloordiv__ = _operator("floordiv", "//", operator.floordiv, reflected=True)
    __rmod__ = _operator("mod", "%", operator.mod, reflected=True)
    __rpow__ = _operator("pow", "**", operator.pow, reflected=True)


#: What the solution's process answers for an attribute that is a method of the object, and for
#: one that is a method of the object's class (the same for every object of the class).
_METHOD = object()
_CLASS_METHOD = object()


class _Method:
    """A method of an object of the solution, seen from the judge: calling it is one request, in
    which the solution's process looks the name up on the object and calls what it holds then.
    Once an attribute of a type was a method, the judge asks no more for it on objects of that
    type (reading it again as a value, not calling it, would not see it turned into data)."""

    __slots__ = ("_name", "_owner")

    def __init__(self, owner: Remote, name: str) -> None:
        self._owner, self._name = owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self._owner, "call_method", (self._name,), args, kwargs)

    def __eq__(self, other: object) -> bool:
        return type(other) is _Method and other._owner is self._owner and other._name == self._name

    def __hash__(self) -> int:
        return hash((id(self._owner), self._name))

    def __repr__(self) -> str:
        return f"<method {self._name} of {self._owner!r}>"


def _call(
    remote: Remote, operation: str, prefix: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Call ``remote`` (``"call"``) or a method of it (``"call_method"``, its name in ``prefix``);
    the arguments the solution changed in place are changed here too."""
    peer: _Peer = object.__getattribute__(remote, "_peer")
    answer = peer.ask(operation, object.__getattribute__(remote, "_handle"), (*prefix, *args), kwargs)
    result = peer.result(answer)
    if len(answer) == 3 and type(answer[2]) is list:
        for copied in answer[2]:
            _copy_back(peer, args, kwargs, copied)
    return result


def _call_with_built(function: Any, /, *args: Any, **kwargs: Any) -> Any:
    """A test's call with :class:`_Built` arguments (see :func:`compile_tests`): to the solution
    they go as they are (as their expressions), to anything else built first."""
    if type(function) is Remote or type(function) is _Method:
        return function(*args, **kwargs)
    return function(
        *[arg.make() if type(arg) is _Built else arg for arg in args],
        **{key: value.make() if type(value) is _Built else value for key, value in kwargs.items()},
    )


def _copy_back(peer: _Peer, args: tuple[Any, ...], kwargs: dict[str, Any], copied: Any) -> None:
    """Give a list, dict, set or bytearray argument the contents the solution left in its copy."""
    if type(copied) is not list or len(copied) != 2:
        return
    key, data = copied
    if type(key) is int and 0 <= key < len(args):
        original = args[key]
    elif type(key) is str and key in kwargs:
        original = kwargs[key]
    else:
        return
    value = peer._decoded(data)
    if type(original) is not type(value):
        return
    if type(original) is dict or type(original) is set:
        original.clear()
        original.update(value)
    else:
        original[:] = value


def _not_dumpable() -> None:
    """Keep processes of the same uid out of this one's /proc entries and from attaching to it.

    Changing uid at the sandbox's start-up already made executions non-dumpable where the sandbox
    runs them as another user; this holds where it cannot. The fork server's own binding is used
    when the program runs in one (loading libc through ctypes costs more than the rest of this).
    """
    linux = sys.modules.get("mrlm.envs.sandbox.forkserver.linux")
    try:
        if linux is not None and hasattr(linux, "set_not_dumpable"):
            linux.set_not_dumpable()
            return
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        pass


def main() -> None:
    """Start the solution's process, read the task, test the solution, write the report, exit."""
    # The fork comes first: a page this process writes before it is copied twice (once for each
    # write, before and after), so the less done before, the cheaper the execution. The solution's
    # process waits for its source, which comes only after everything below.
    start_error = None
    try:
        started = _start_solution_process()
    except OSError as error:
        start_error = f"cannot start the solution's process ({error}); it needs Limits.processes >= 2"
        started = (0, -1, -1)
    _not_dumpable()
    here = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry and os.path.abspath(entry) != here]
    peer = _Peer(started[1], started[2], _JUDGE_OPERATIONS, Remote, judge=True)
    peer.pid = started[0]
    report_fd = os.dup(1)
    payload = json.loads(sys.stdin.read())
    nonce: str = payload.pop("nonce")
    limit = int(payload["error_chars"])
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the tests print is not the report
    os.close(devnull)
    report: dict[str, Any]
    if start_error is not None:
        report = {"stage": "harness", "error": start_error}
    else:
        try:
            report = _evaluate(payload, peer, limit)
        except BaseException as error:
            report = {"stage": "harness", "error": _describe(error, limit)}
        # Its end of file: the solution's process exits now, and its teardown overlaps with ours
        # (left to the pid namespace, it would come after ours).
        with contextlib.suppress(OSError):
            os.close(peer.write_fd)
    os.write(report_fd, f"\n{RESULT_MARKER} {nonce} {report!r}\n".encode("utf-8", "replace"))
    # Our output ends here: the sandbox can answer now rather than once this process has exited
    # (``until_output_closed``), which for a process this size takes about a millisecond.
    for fd in (report_fd, 2):
        with contextlib.suppress(OSError):
            os.close(fd)
    os._exit(0)  # the solution's process ends with us (we are pid 1 of the execution)


def _evaluate(payload: dict[str, Any], peer: _Peer, limit: int) -> dict[str, Any]:
    step_limit = float(payload["step_time_limit_s"])
    entry_point = str(payload["entry_point"])
    signal.signal(signal.SIGALRM, _on_alarm)
    # The solution loads in its process while the tests compile in this one.
    with contextlib.suppress(SolutionGone):  # then the answer below says so
        peer.send_request("load", 0, [payload.pop("solution")])
    codes = _precompiled(payload)
    if codes is None:
        codes = compile_tests(payload["test_setup"], [code for code, _ in payload["steps"]], entry_point)
    setup = codes[0]
    steps = [(code, bool(counted)) for code, (_, counted) in zip(codes[1:], payload["steps"], strict=True)]
    counted = sum(1 for _, is_test in steps if is_test)

    def run(action: Any) -> tuple[bool, str, bool, int | None]:
        """Run ``action`` under the step alarm: (failed, error, timed out, line in the solution)."""
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, step_limit)
                action()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except StepTimeout:
            peer.end("a test ran out of time")
            return True, f"TimeoutError: took longer than {step_limit:g} s", True, None
        except BaseException as error:
            line = getattr(error, "solution_line", None)
            return True, _describe(error, limit), False, line if type(line) is int else None
        return False, "", False, None

    answers: list[list[Any]] = []
    failed, error, timed_out, line = run(lambda: answers.append(peer.answer()))
    if failed:
        return {"stage": "load", "error": error, "line": line, "timed_out": timed_out}
    answer = answers[0]
    if answer[0] == "syntax" and len(answer) == 5:
        line, column, message, text = answer[1:]
        return {
            "stage": "syntax",
            "line": line if type(line) is int else None,
            "column": column if type(column) is int else None,
            "message": _text(message, limit),
            "text": _text(text, limit) if type(text) is str else None,
        }
    if answer[0] == "raise" and len(answer) == 5:
        raised = peer.exception(answer[1:])
        line = getattr(raised, "solution_line", None)
        return {"stage": "load", "error": _describe(raised, limit), "line": line, "timed_out": False}
    if answer[0] != "ok" or len(answer) != 3 or type(answer[1]) is not list:
        peer.end("the solution's process broke the protocol")
        return {"stage": "load", "error": f"SolutionGone: {peer.gone}", "line": None, "timed_out": False}

    names: dict[str, Any] = {}
    failed, error, _, _ = run(lambda: names.update(_names(peer, answer[1])))
    if failed:
        return {"stage": "load", "error": error, "line": None, "timed_out": False}
    if entry_point not in names:
        missing = f"NameError: the code does not define {entry_point!r}"
        return {"stage": "tests", "results": [[False, missing, False, None]] * counted}

    tests: dict[str, Any] = {}
    for name, value in names.items():
        if name not in vars(builtins) or name == entry_point:  # the tests keep their builtins
            tests[name] = value
    # Set last, whatever came from the solution: the tests' own module name and builtins.
    tests["__name__"], tests["__builtins__"] = "solution_tests", builtins
    tests[_CALL_WITH_BUILT], tests[_BUILT] = _call_with_built, _Built  # see compile_tests
    tests["candidate"] = names[entry_point]

    # After a set-up step fails or any step runs out of time, the remaining tests are not run;
    # they fail, and the first of them carries a set-up step's timeout so that it is not lost.
    results: list[list[Any]] = []
    skip_reason: str | None = None
    failed, error, timed_out, _ = run(lambda: exec(setup, tests))
    if failed:
        skip_reason = f"not run: the test set-up failed: {error}"
    for code, is_test in steps:
        if skip_reason is None and peer.gone is not None:
            skip_reason = f"not run: the solution's process ended: {peer.gone}"
        if skip_reason is not None:
            if is_test:
                results.append([False, _text(skip_reason, limit), timed_out, None])
                timed_out = False
            continue
        failed, error, timed_out, line = run(lambda code=code: exec(code, tests))
        if is_test:
            results.append([not failed, error if failed else None, timed_out, line])
            if timed_out:
                skip_reason, timed_out = "not run: an earlier test ran out of time", False
        elif failed:
            skip_reason = f"not run: a set-up statement before it failed: {error}"
    return {"stage": "tests", "results": results}


#: The names under which the tests' code finds :func:`_call_with_built` and :class:`_Built`.
_CALL_WITH_BUILT, _BUILT = "__mrlm_call__", "__mrlm_built__"
#: Names that let test code rebind others without naming them (``globals()["range"] = ...``): with
#: any of them in the tests, no argument is built in the solution's process.
_REBINDERS = frozenset({"builtins", "__builtins__", "exec", "eval", "globals", "locals", "vars", "setattr"})


def compile_tests(test_setup: str, steps: list[str] | tuple[str, ...], entry_point: str) -> list[Any]:
    """The code objects of a task's test set-up and steps (in that order), compiled as this
    module's own code is (``from __future__ import annotations``, asserts kept).

    Where a call's argument is a value the test builds from constants alone with ``list``,
    ``range``, ``tuple``, ``reversed``, numbers, strings and operators, and that
    takes building (a call or a repetition: ``list(range(0, 10**6, 2))``, ``[7] * 1000``), the call
    becomes ``__mrlm_call__(f, ..., __mrlm_built__(source, lambda: value, {name: name, ...}), ...)``:
    to the solution, the argument crosses as its expression (see :class:`_Built`). Only where those
    names mean the built-ins in every test (none of them is bound by the tests' code or is the entry
    point, and the tests use nothing that rebinds names unseen: ``exec``, ``globals``,
    ``import *``, ...), and at each call only where they hold the built-ins then
    (:meth:`_Built.as_expression`); repetitions that would share a mutable item stay values.

    A test whose tree is too deep to rewrite, or whose constants have no text (an int of more
    digits than ``int`` writes), is compiled as it is written. Raises SyntaxError (and what
    ``compile`` raises) as ``compile`` would.
    """
    sources = [(test_setup, "<test setup>"), *((code, "<test>") for code in steps)]
    flags = __future__.annotations.compiler_flag

    def written(source: str, name: str) -> Any:
        return compile(source, name, "exec", flags=flags, dont_inherit=True, optimize=0)

    try:
        trees = [ast.parse(source, name) for source, name in sources]
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return [written(source, name) for source, name in sources]  # the same code, or error, as ever
    builders = _unbound_builders(trees, entry_point)
    if not builders:
        return [written(source, name) for source, name in sources]
    rewrite, codes = _BuiltArguments(builders), []
    for tree, (source, name) in zip(trees, sources, strict=True):
        try:
            tree = ast.fix_missing_locations(rewrite.visit(tree))
            codes.append(compile(tree, name, "exec", flags=flags, dont_inherit=True, optimize=0))
        except (SyntaxError, RecursionError, ValueError, MemoryError):
            codes.append(written(source, name))
    return codes


def _unbound_builders(trees: list[Any], entry_point: str) -> frozenset[str]:
    """The names of :data:`_BUILDERS` that mean the built-ins everywhere in ``trees`` (none when
    the tests could rebind names unseen)."""
    bound = {entry_point}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                if node.id in _REBINDERS:
                    return frozenset()
                if not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
            elif isinstance(node, ast.Attribute) and node.attr in _REBINDERS:
                return frozenset()
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.alias):
                if node.name == "*" or node.name.split(".")[0] in _REBINDERS:
                    return frozenset()
                bound.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                bound.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif type(node).__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
                bound.update(
                    name for name in (getattr(node, "name", None), getattr(node, "rest", None)) if name
                )
    return frozenset(_BUILDERS) - bound


class _BuiltArguments(ast.NodeTransformer):
    """Rewrites calls with built arguments (see :func:`compile_tests`)."""

    def __init__(self, builders: frozenset[str]) -> None:
        self.builders = builders

    def visit_Call(self, node: Any) -> Any:
        if self._constant(node):
            return node  # a value built by the tests' own builders (where it is an argument, above)
        plain = all(not isinstance(arg, ast.Starred) for arg in node.args) and all(
            keyword.arg is not None for keyword in node.keywords
        )
        if not plain or not any(self._built(value) for value in self._values(node)):
            return self.generic_visit(node)
        args = [self._argument(arg) for arg in node.args]
        keywords = [
            ast.keyword(arg=keyword.arg, value=self._argument(keyword.value)) for keyword in node.keywords
        ]
        call = ast.Call(
            func=ast.Name(id=_CALL_WITH_BUILT, ctx=ast.Load()),
            args=[self.visit(node.func), *args],
            keywords=keywords,
        )
        return ast.copy_location(call, node)

    @staticmethod
    def _values(node: Any) -> list[Any]:
        return [*node.args, *(keyword.value for keyword in node.keywords)]

    # Annotations stay as written (under ``from __future__ import annotations`` they are text).
    def visit_arg(self, node: Any) -> Any:
        return node

    def visit_AnnAssign(self, node: Any) -> Any:
        annotation = node.annotation
        self.generic_visit(node)
        node.annotation = annotation
        return node

    def visit_FunctionDef(self, node: Any) -> Any:
        returns = node.returns
        self.generic_visit(node)
        node.returns = returns
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815  (the name NodeTransformer calls)

    def _argument(self, node: Any) -> Any:
        """``node`` as a :class:`_Built` where it is built, else rewritten inside."""
        if not self._built(node):
            return self.visit(node)
        thunk = ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=node
        )
        called = sorted(
            {
                part.func.id
                for part in ast.walk(node)
                if isinstance(part, ast.Call) and isinstance(part.func, ast.Name)
            }
        )  # every call of a built argument is of a builder's name (see _constant)
        builders = ast.Dict(
            keys=[ast.Constant(name) for name in called],
            values=[ast.Name(id=name, ctx=ast.Load()) for name in called],
        )
        made = ast.Call(
            func=ast.Name(id=_BUILT, ctx=ast.Load()),
            args=[ast.Constant(ast.unparse(node)), thunk, builders],
            keywords=[],
        )
        return ast.copy_location(made, node)

    def _built(self, node: Any) -> bool:
        """Whether ``node`` is built from constants alone and takes building."""
        if not self._constant(node):
            return False
        return any(
            isinstance(part, ast.Call)
            or (
                isinstance(part, ast.BinOp)
                and isinstance(part.op, ast.Mult)
                and any(
                    isinstance(side, (ast.List, ast.Tuple)) or _is_text(side)
                    for side in (part.left, part.right)
                )
            )
            for part in ast.walk(node)
        )

    def _constant(self, node: Any) -> bool:
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float, str, bytes, bool) or node.value is None
        if isinstance(node, (ast.List, ast.Tuple)):  # not a set display: it drops duplicates, as set() does
            return all(self._constant(item) for item in node.elts)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.USub, ast.UAdd)) and self._constant(node.operand)
        if isinstance(node, ast.BinOp):
            operators = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)
            if isinstance(node.op, ast.Mult) and not (_unshared(node.left) and _unshared(node.right)):
                return False  # [[0] * 2] * 3 holds one list thrice, the value the tests send three
            return isinstance(node.op, operators) and self._constant(node.left) and self._constant(node.right)
        if isinstance(node, ast.Call):
            return (
                isinstance(node.func, ast.Name)
                and node.func.id in self.builders
                and not node.keywords
                and all(self._constant(arg) for arg in node.args)
            )
        return False


def _is_text(node: Any) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (str, bytes)


def _atom(node: Any) -> bool:
    """Whether ``node`` makes an immutable value: a constant, arithmetic on them, a tuple of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _atom(node.operand)
    if isinstance(node, ast.BinOp):
        return _atom(node.left) and _atom(node.right)
    return isinstance(node, ast.Tuple) and all(_atom(item) for item in node.elts)


def _unshared(node: Any) -> bool:
    """Whether repeating what ``node`` makes (``node * n``) shares no mutable item: a number or
    text, or a sequence of immutable items only. Values cross as copies, each item its own, so a
    repetition that would share one list between places is sent as a value, as it was."""
    if _atom(node):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_atom(item) for item in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "range" or all(_unshared(arg) for arg in node.args)
    if isinstance(node, ast.BinOp):
        return _unshared(node.left) and _unshared(node.right)
    return False


def _precompiled(payload: dict[str, Any]) -> list[Any] | None:
    """The tests as the caller compiled them (set-up first, then each step), where it ran this
    very interpreter; else None, and the judge compiles them. From the caller, so safe to load."""
    compiled = payload.get("compiled")
    if type(compiled) is not str or payload.get("compiled_for") != sys.version:
        return None
    codes = marshal.loads(bytes.fromhex(compiled))
    if type(codes) is not list or len(codes) != 1 + len(payload["steps"]):
        return None
    return codes


def _names(peer: _Peer, entries: list[Any]) -> dict[str, Any]:
    """The solution's top-level names and their values (or stand-ins).

    Only names the solution's loader sends: identifiers that do not start with ``__``. Anything
    else comes from a solution that answered the load itself, and a name such as ``__builtins__``
    would replace what the tests' own code looks up (``abs``, ``sorted``, ``__build_class__``).
    """
    names = {}
    for entry in entries:
        if type(entry) is list and len(entry) == 2 and type(entry[0]) is str:
            name = entry[0]
            if name.isidentifier() and not name.startswith("__"):
                names[name] = peer._decoded(entry[1])
    return names


def source_stamp(text: str) -> str:
    """A version stamp of the harness's text: its length and CRC-32. The text comes from the
    package's own file on both sides, so this tells versions apart and needs no cryptographic hash
    (whose module would load a crypto library into every sandbox worker)."""
    import zlib

    data = text.encode("utf-8")
    return f"{len(data)}-{zlib.crc32(data):08x}"


def _own_stamp() -> str | None:
    """:func:`source_stamp` of this file, when imported as a module (the sandbox's workers preload
    it): :func:`mrlm.envs.code.execution.bootstrap_program` runs this module's :func:`main` when the
    stamps match, rather than defining everything again."""
    try:
        with open(__file__, encoding="utf-8") as handle:
            return source_stamp(handle.read())
    except Exception:
        return None


if __name__ == "__main__":
    main()
else:
    SOURCE_STAMP = _own_stamp()
