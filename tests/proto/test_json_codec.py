"""encode_json/decode_json round-trip JSON types exactly and refuse what would not come back."""

from __future__ import annotations

import enum
import math

import numpy as np
import pytest

from mrlm.proto.json_codec import decode_json, decode_json_object, encode_json


def _typed(value: object) -> object:
    """``value`` with the type of every nested item, so that 1 and 1.0 and True compare unequal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value), value)


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -7,
        2**80,
        0.0,
        1.0,
        -2.5,
        1e300,
        5e-324,
        "",
        'naïve ✓ "quoted" \n',
        [],
        {},
        {"a": [1, 2.0, False, None, {"b": "c"}], "z": {}, "m": 0},
    ],
)
def test_round_trip_keeps_types(value: object) -> None:
    assert _typed(decode_json(encode_json(value))) == _typed(value)


def test_negative_zero_keeps_its_sign() -> None:
    assert math.copysign(1.0, decode_json(encode_json(-0.0))) == -1.0


def test_output_is_compact_utf8_and_keeps_key_order() -> None:
    assert encode_json({"z": 1, "a": [1.0, "é"]}) == '{"z":1,"a":[1.0,"é"]}'


def test_tuples_become_lists() -> None:
    assert decode_json(encode_json({"pair": (1, ("x", None))})) == {"pair": [1, ["x", None]]}


def test_enum_subclasses_become_plain_values() -> None:
    class Colour(enum.IntEnum):
        RED = 1

    class Name(str, enum.Enum):
        ALICE = "alice"

    assert encode_json([Colour.RED, Name.ALICE, {Name.ALICE: 0}]) == '[1,"alice",{"alice":0}]'


class FakeScalar:
    """Looks like a NumPy scalar: only ``.item()``."""

    def __init__(self, value: object) -> None:
        self.value = value

    def item(self) -> object:
        return self.value


class FakeArray:
    """Looks like a NumPy array: ``.tolist()`` and an ``.item()`` that fails for size > 1."""

    def __init__(self, rows: list[list[object]]) -> None:
        self.rows = rows

    def tolist(self) -> list[list[object]]:
        return self.rows

    def item(self) -> object:
        raise ValueError("can only convert an array of size 1")


class SelfConverting:
    """A ``.tolist()`` that hands back its own kind must not recurse forever."""

    def tolist(self) -> SelfConverting:
        return SelfConverting()


def test_duck_typed_numpy_like_values() -> None:
    value = {"n": FakeScalar(3), "flag": FakeScalar(False), "grid": FakeArray([[1, 2], [FakeScalar(0.5), 4]])}
    assert _typed(decode_json(encode_json(value))) == _typed(
        {"n": 3, "flag": False, "grid": [[1, 2], [0.5, 4]]}
    )


def test_real_numpy_values() -> None:
    value = {
        "int": np.int64(3),
        "float": np.float64(1.0),
        "float32": np.float32(0.5),
        "bool": np.bool_(False),
        "str": np.str_("x"),
        "array": np.array([[1, 2]], dtype=np.int32),
        "floats": np.zeros(2),
    }
    expected = {"int": 3, "float": 1.0, "float32": 0.5, "bool": False, "str": "x", "array": [[1, 2]]}
    expected["floats"] = [0.0, 0.0]
    assert _typed(decode_json(encode_json(value))) == _typed(expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), r"^\$: non-finite float nan"),
        ({"a": [1.0, math.inf]}, r"^\$\['a'\]\[1\]: non-finite float inf"),
        ({"a": {"b": -math.inf}}, r"^\$\['a'\]\['b'\]: non-finite"),
        ({"x": np.array([1.0, np.nan])}, r"^\$\['x'\]\[1\]: non-finite"),
        ({"raw": b"bytes"}, r"^\$\['raw'\]: bytes is not JSON-encodable"),
        ({"s": {1, 2}}, r"^\$\['s'\]: set is not JSON-encodable"),
        ([object()], r"^\$\[0\]: object is not JSON-encodable"),
        ([SelfConverting()], r"^\$\[0\]: SelfConverting is not JSON-encodable"),
        ({"k": {1: "one"}}, r"^\$\['k'\]: dict key 1 is not a string"),
        ({None: 1}, r"^\$: dict key None is not a string"),
    ],
)
def test_encode_refuses_what_would_not_round_trip(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        encode_json(value)


def test_encode_refuses_circular_values() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        encode_json(loop)


def test_empty_text_decodes_to_empty_object() -> None:
    assert decode_json("") == {}
    assert decode_json_object("") == {}


def test_numbers_keep_integer_or_float_type() -> None:
    assert type(decode_json("1")) is int
    assert type(decode_json("1.0")) is float
    assert type(decode_json("1e3")) is float


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"malformed JSON at line 1 column 2"),
        ('{"a": 1,}', r"malformed JSON at line 1 column 9"),
        ("   ", r"malformed JSON"),
        ("[1]\n[2]", r"malformed JSON at line 2 column 1"),
        ("NaN", r"NaN is not a JSON number"),
        ('{"a": -Infinity}', r"-Infinity is not a JSON number"),
    ],
)
def test_decode_refuses_malformed_json(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_json(text)


def test_decode_json_object() -> None:
    assert decode_json_object('{"seed": 1}') == {"seed": 1}
    with pytest.raises(ValueError, match="expected a JSON object, got list"):
        decode_json_object("[1]")
    with pytest.raises(ValueError, match="expected a JSON object, got NoneType"):
        decode_json_object("null")
