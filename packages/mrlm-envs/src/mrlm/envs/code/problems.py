"""The built-in problems of ``mrlm/Code-v0``, written for this project.

Each problem is a signature with a docstring (what the agent sees), a reference body that completes it
(the tests prove it passes), and several independent tests with edge cases. A test is a statement
block that raises when the solution is wrong; it calls the entry point by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from mrlm.envs.code.tasks import CodeTask, TestStep, code_before_definition


@dataclass(frozen=True)
class BuiltinProblem:
    """One built-in problem; ``prompt + solution`` is a complete, correct program."""

    entry_point: str
    prompt: str
    solution: str
    tests: tuple[str, ...]


def _raises(call: str, error: str = "ValueError") -> str:
    """A test that ``call`` raises ``error``."""
    return f"try:\n    {call}\nexcept {error}:\n    pass\nelse:\n    raise AssertionError({call!r} + ' must raise {error}')"


PROBLEMS: tuple[BuiltinProblem, ...] = (
    BuiltinProblem(
        "run_length_encode",
        '''def run_length_encode(text: str) -> str:
    """Compress each run of a repeated character into the character followed by the run's length.

    A run of length one is written as the bare character. The text contains no digits.

    >>> run_length_encode("xxxyz")
    'x3yz'
    """
''',
        """    parts = []
    index = 0
    while index < len(text):
        end = index
        while end < len(text) and text[end] == text[index]:
            end += 1
        run = end - index
        parts.append(text[index] + (str(run) if run > 1 else ""))
        index = end
    return "".join(parts)
""",
        (
            'assert run_length_encode("aaabcc") == "a3bc2"',
            'assert run_length_encode("") == ""',
            'assert run_length_encode("q") == "q"',
            'assert run_length_encode("abc") == "abc"',
            'assert run_length_encode("z" * 12) == "z12"',
            'assert run_length_encode("aabbaa") == "a2b2a2"',
            'assert run_length_encode("  !") == " 2!"',
        ),
    ),
    BuiltinProblem(
        "rotate_words",
        '''def rotate_words(sentence: str, k: int) -> str:
    """Rotate the words of a sentence k places to the right: the last k words move to the front.

    Words are separated by any whitespace in the input and by single spaces in the output. A
    negative k rotates to the left. A sentence without words gives "".

    >>> rotate_words("red green blue", 1)
    'blue red green'
    """
''',
        """    words = sentence.split()
    if not words:
        return ""
    k %= len(words)
    return " ".join(words[len(words) - k :] + words[: len(words) - k])
""",
        (
            'assert rotate_words("a b c d", 2) == "c d a b"',
            'assert rotate_words("a b c", 3) == "a b c"',
            'assert rotate_words("a b c", 4) == "c a b"',
            'assert rotate_words("a b c", -1) == "b c a"',
            'assert rotate_words("", 5) == ""',
            'assert rotate_words("  solo  ", 7) == "solo"',
            'assert rotate_words("x\\ty\\n z", 1) == "z x y"',
        ),
    ),
    BuiltinProblem(
        "chunk",
        '''def chunk(items: list, size: int) -> list:
    """Split items into consecutive lists of the given size; the last list may be shorter.

    Raise ValueError when size is less than 1.

    >>> chunk([1, 2, 3], 2)
    [[1, 2], [3]]
    """
''',
        """    if size < 1:
        raise ValueError("size must be at least 1")
    return [list(items[start : start + size]) for start in range(0, len(items), size)]
""",
        (
            "assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]",
            "assert chunk([], 3) == []",
            "assert chunk([1, 2, 3], 3) == [[1, 2, 3]]",
            "assert chunk([1], 5) == [[1]]",
            "assert chunk(list('abcdef'), 4) == [['a', 'b', 'c', 'd'], ['e', 'f']]",
            _raises("chunk([1], 0)"),
            _raises("chunk([1, 2], -3)"),
        ),
    ),
    BuiltinProblem(
        "invert_mapping",
        '''def invert_mapping(mapping: dict) -> dict:
    """Map each value of mapping to the sorted list of the keys that had it.

    The argument is left unchanged.

    >>> invert_mapping({"x": 0, "y": 0})
    {0: ['x', 'y']}
    """
''',
        """    inverted: dict = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in inverted.items()}
""",
        (
            'assert invert_mapping({"a": 1, "b": 2, "c": 1}) == {1: ["a", "c"], 2: ["b"]}',
            "assert invert_mapping({}) == {}",
            'assert invert_mapping({3: "x", 1: "x", 2: "y"}) == {"x": [1, 3], "y": [2]}',
            'original = {"k": "v", "j": "v"}\ninvert_mapping(original)\nassert original == {"k": "v", "j": "v"}',
            "assert invert_mapping({(1, 2): None}) == {None: [(1, 2)]}",
        ),
    ),
    BuiltinProblem(
        "digital_root",
        '''def digital_root(n: int) -> int:
    """Sum the decimal digits of n, then the digits of that sum, and so on, until one digit is left.

    n is never negative.

    >>> digital_root(49)
    4
    """
''',
        """    while n >= 10:
        n = sum(int(digit) for digit in str(n))
    return n
""",
        (
            "assert digital_root(0) == 0",
            "assert digital_root(7) == 7",
            "assert digital_root(38) == 2",
            "assert digital_root(99999) == 9",
            "assert digital_root(10) == 1",
            "assert digital_root(10**20 + 5) == 6",
        ),
    ),
    BuiltinProblem(
        "count_change",
        '''def count_change(amount: int, coins: list[int]) -> int:
    """Count the ways to pay amount with any number of coins of the given (distinct, positive) values.

    The order of the coins does not matter. There is one way to pay 0 and none to pay a negative
    amount.

    >>> count_change(5, [1, 2])
    3
    """
''',
        """    if amount < 0:
        return 0
    ways = [1] + [0] * amount
    for coin in coins:
        for total in range(coin, amount + 1):
            ways[total] += ways[total - coin]
    return ways[amount]
""",
        (
            "assert count_change(4, [1, 2, 3]) == 4",
            "assert count_change(0, [5]) == 1",
            "assert count_change(3, []) == 0",
            "assert count_change(10, [5, 2, 3]) == 4",
            "assert count_change(-1, [1]) == 0",
            "assert count_change(7, [2, 4]) == 0",
            "assert count_change(100, [1, 5, 10, 25, 50]) == 292",
        ),
    ),
    BuiltinProblem(
        "flatten",
        '''def flatten(nested) -> list:
    """Flatten nested lists and tuples, to any depth, into one list in left-to-right order.

    Strings and all other values are kept whole.

    >>> flatten([1, (2, [3])])
    [1, 2, 3]
    """
''',
        """    flat = []
    for item in nested:
        if isinstance(item, (list, tuple)):
            flat.extend(flatten(item))
        else:
            flat.append(item)
    return flat
""",
        (
            "assert flatten([1, [2, [3, (4, 5)]], 6]) == [1, 2, 3, 4, 5, 6]",
            "assert flatten([]) == []",
            "assert flatten([[], [[]], ()]) == []",
            'assert flatten(["ab", ["cd"]]) == ["ab", "cd"]',
            "assert flatten(((1,), [2])) == [1, 2]",
            "deep = [7]\nfor _ in range(100):\n    deep = [deep]\nassert flatten(deep) == [7]",
            "assert flatten([None, {'k': 1}]) == [None, {'k': 1}]",
        ),
    ),
    BuiltinProblem(
        "balanced_brackets",
        '''def balanced_brackets(text: str) -> bool:
    """Tell whether every (, [ and { in text is closed by its matching bracket, properly nested.

    Characters other than the six brackets are ignored.

    >>> balanced_brackets("f(x[0])")
    True
    """
''',
        """    closing = {")": "(", "]": "[", "}": "{"}
    stack = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in closing:
            if not stack or stack.pop() != closing[char]:
                return False
    return not stack
""",
        (
            'assert balanced_brackets("") is True',
            'assert balanced_brackets("a(b[c]{d}e)f") is True',
            'assert balanced_brackets("(]") is False',
            'assert balanced_brackets("([)]") is False',
            'assert balanced_brackets("((") is False',
            'assert balanced_brackets("))((") is False',
            'assert balanced_brackets("{[()()]}") is True',
        ),
    ),
    BuiltinProblem(
        "merge_intervals",
        '''def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping closed intervals (start <= end) and return them sorted by start.

    Intervals that share an end point overlap; [1, 2] and [3, 4] do not.

    >>> merge_intervals([(4, 9), (0, 5)])
    [(0, 9)]
    """
''',
        """    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
""",
        (
            "assert merge_intervals([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]",
            "assert merge_intervals([]) == []",
            "assert merge_intervals([(5, 5)]) == [(5, 5)]",
            "assert merge_intervals([(1, 2), (3, 4)]) == [(1, 2), (3, 4)]",
            "assert merge_intervals([(1, 2), (2, 3)]) == [(1, 3)]",
            "assert merge_intervals([(6, 8), (1, 9), (2, 4)]) == [(1, 9)]",
            "assert merge_intervals([(4, 5), (1, 2)]) == [(1, 2), (4, 5)]",
        ),
    ),
    BuiltinProblem(
        "top_words",
        '''def top_words(text: str, k: int) -> list[str]:
    """Return the k most frequent words of text, lowercased, most frequent first.

    A word is a run of ASCII letters, compared without case. Ties go in alphabetical order. With
    fewer than k distinct words, return them all.

    >>> top_words("Go go stop", 2)
    ['go', 'stop']
    """
''',
        """    import re
    from collections import Counter

    counts = Counter(word.lower() for word in re.findall("[A-Za-z]+", text))
    ranked = sorted(counts, key=lambda word: (-counts[word], word))
    return ranked[: max(k, 0)]
""",
        (
            'assert top_words("the cat and the hat", 1) == ["the"]',
            'assert top_words("b a c b a", 2) == ["a", "b"]',
            'assert top_words("", 3) == []',
            'assert top_words("Dog dog DOG cat", 5) == ["dog", "cat"]',
            'assert top_words("x1y x y", 2) == ["x", "y"]',
            'assert top_words("it\'s", 2) == ["it", "s"]',
            'assert top_words("a b", 0) == []',
        ),
    ),
    BuiltinProblem(
        "caesar_shift",
        '''def caesar_shift(text: str, shift: int) -> str:
    """Shift each ASCII letter of text by shift places in the alphabet, wrapping around, keeping case.

    Other characters are unchanged; a negative shift moves backwards.

    >>> caesar_shift("Az", 2)
    'Cb'
    """
''',
        """    shifted = []
    for char in text:
        if "a" <= char <= "z" or "A" <= char <= "Z":
            base = ord("a") if char.islower() else ord("A")
            shifted.append(chr(base + (ord(char) - base + shift) % 26))
        else:
            shifted.append(char)
    return "".join(shifted)
""",
        (
            'assert caesar_shift("abc", 1) == "bcd"',
            'assert caesar_shift("XYZ", 3) == "ABC"',
            'assert caesar_shift("Hello, World!", 13) == "Uryyb, Jbeyq!"',
            'assert caesar_shift("abc", -1) == "zab"',
            'assert caesar_shift("", 5) == ""',
            'assert caesar_shift("mixed 123", 26) == "mixed 123"',
            'assert caesar_shift("a", 27) == "b"',
            'assert caesar_shift("\\u00e9t\\u00e9", 1) == "\\u00e9u\\u00e9"',
        ),
    ),
    BuiltinProblem(
        "pascal_row",
        '''def pascal_row(n: int) -> list[int]:
    """Return row n of Pascal's triangle; row 0 is [1].

    >>> pascal_row(2)
    [1, 2, 1]
    """
''',
        """    row = [1]
    for _ in range(n):
        row = [1] + [left + right for left, right in zip(row, row[1:])] + [1]
    return row
""",
        (
            "assert pascal_row(0) == [1]",
            "assert pascal_row(1) == [1, 1]",
            "assert pascal_row(4) == [1, 4, 6, 4, 1]",
            "assert pascal_row(10)[5] == 252",
            "assert len(pascal_row(30)) == 31",
            "assert sum(pascal_row(20)) == 2**20",
        ),
    ),
    BuiltinProblem(
        "spiral_order",
        '''def spiral_order(matrix: list[list[int]]) -> list[int]:
    """List the elements of a rectangular matrix in clockwise spiral order from the top-left corner.

    >>> spiral_order([[1, 2], [3, 4]])
    [1, 2, 4, 3]
    """
''',
        """    rows = [list(row) for row in matrix]
    order: list[int] = []
    while rows:
        order.extend(rows.pop(0))
        rows = [list(column) for column in zip(*rows)][::-1]
    return order
""",
        (
            "assert spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]",
            "assert spiral_order([]) == []",
            "assert spiral_order([[1]]) == [1]",
            "assert spiral_order([[1, 2, 3, 4]]) == [1, 2, 3, 4]",
            "assert spiral_order([[1], [2], [3]]) == [1, 2, 3]",
            "assert spiral_order([[1, 2], [3, 4], [5, 6]]) == [1, 2, 4, 6, 5, 3]",
        ),
    ),
    BuiltinProblem(
        "MinStack",
        '''class MinStack:
    """A stack of comparable values that can also report its smallest value.

    - ``push(value)`` puts value on top;
    - ``pop()`` removes and returns the top value;
    - ``peek()`` returns the top value without removing it;
    - ``min()`` returns the smallest value on the stack;
    - ``len(stack)`` is the number of values.

    ``pop``, ``peek`` and ``min`` raise IndexError on an empty stack.
    """
''',
        """
    def __init__(self) -> None:
        self._items: list = []
        self._minimums: list = []

    def push(self, value) -> None:
        self._items.append(value)
        if not self._minimums or value <= self._minimums[-1]:
            self._minimums.append(value)

    def pop(self):
        if not self._items:
            raise IndexError("pop from an empty stack")
        value = self._items.pop()
        if value == self._minimums[-1]:
            self._minimums.pop()
        return value

    def peek(self):
        if not self._items:
            raise IndexError("peek at an empty stack")
        return self._items[-1]

    def min(self):
        if not self._minimums:
            raise IndexError("min of an empty stack")
        return self._minimums[-1]

    def __len__(self) -> int:
        return len(self._items)
""",
        (
            "stack = MinStack()\nassert len(stack) == 0\nstack.push(3)\nstack.push(1)\nstack.push(2)\n"
            "assert (len(stack), stack.peek(), stack.min()) == (3, 2, 1)",
            "stack = MinStack()\nfor value in [5, 2, 2, 7]:\n    stack.push(value)\n"
            "assert stack.pop() == 7 and stack.min() == 2\nassert stack.pop() == 2 and stack.min() == 2\n"
            "assert stack.pop() == 2 and stack.min() == 5",
            _raises("MinStack().pop()", "IndexError"),
            _raises("MinStack().peek()", "IndexError"),
            "stack = MinStack()\nstack.push(-1)\nstack.pop()\n" + _raises("stack.min()", "IndexError"),
            "first, second = MinStack(), MinStack()\nfirst.push(1)\nassert len(second) == 0",
        ),
    ),
    BuiltinProblem(
        "sliding_windows",
        '''def sliding_windows(iterable, size: int):
    """Yield, lazily, each run of size consecutive items of iterable as a tuple.

    Nothing is yielded when there are fewer than size items. The iterable may be infinite. Raise
    ValueError when size is less than 1.

    >>> list(sliding_windows("abc", 2))
    [('a', 'b'), ('b', 'c')]
    """
''',
        """    if size < 1:
        raise ValueError("size must be at least 1")
    window: list = []
    for item in iterable:
        window.append(item)
        if len(window) > size:
            window.pop(0)
        if len(window) == size:
            yield tuple(window)
""",
        (
            "assert list(sliding_windows([1, 2, 3, 4], 2)) == [(1, 2), (2, 3), (3, 4)]",
            'assert list(sliding_windows("abc", 3)) == [("a", "b", "c")]',
            "assert list(sliding_windows([1, 2], 3)) == []",
            "from itertools import count, islice\n"
            "assert list(islice(sliding_windows(count(), 3), 2)) == [(0, 1, 2), (1, 2, 3)]",
            "windows = sliding_windows(iter([1, 2, 3]), 1)\nassert next(windows) == (1,)\nassert next(windows) == (2,)",
            _raises("list(sliding_windows([1], 0))"),
        ),
    ),
    BuiltinProblem(
        "primes_below",
        '''def primes_below(limit: int):
    """Yield the prime numbers smaller than limit, in increasing order.

    >>> list(primes_below(8))
    [2, 3, 5, 7]
    """
''',
        """    found: list[int] = []
    for candidate in range(2, limit):
        if all(candidate % prime for prime in found if prime * prime <= candidate):
            found.append(candidate)
            yield candidate
""",
        (
            "assert list(primes_below(10)) == [2, 3, 5, 7]",
            "assert list(primes_below(2)) == []",
            "assert list(primes_below(3)) == [2]",
            "assert list(primes_below(-5)) == []",
            "assert len(list(primes_below(1000))) == 168",
            "assert sum(primes_below(100)) == 1060",
        ),
    ),
    BuiltinProblem(
        "to_base",
        '''def to_base(n: int, base: int) -> str:
    """Write the integer n in the given base, from 2 to 36, with digits 0-9 then A-Z.

    Negative numbers start with "-". Raise ValueError for a base outside 2..36.

    >>> to_base(5, 2)
    '101'
    """
''',
        """    if not 2 <= base <= 36:
        raise ValueError("base must be between 2 and 36")
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    sign, n = ("-", -n) if n < 0 else ("", n)
    out = digits[n % base]
    while n >= base:
        n //= base
        out = digits[n % base] + out
    return sign + out
""",
        (
            'assert to_base(255, 16) == "FF"',
            'assert to_base(0, 2) == "0"',
            'assert to_base(-10, 2) == "-1010"',
            'assert to_base(35, 36) == "Z"',
            'assert to_base(36, 36) == "10"',
            'assert to_base(12345, 10) == "12345"',
            _raises("to_base(3, 1)") + "\n" + _raises("to_base(3, 37)"),
        ),
    ),
    BuiltinProblem(
        "leftmost_index",
        '''def leftmost_index(items: list[int], target: int) -> int:
    """Return the index of the first occurrence of target in items, sorted ascending, or -1.

    >>> leftmost_index([1, 4, 4, 9], 4)
    1
    """
''',
        """    low, high = 0, len(items)
    while low < high:
        middle = (low + high) // 2
        if items[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low if low < len(items) and items[low] == target else -1
""",
        (
            "assert leftmost_index([1, 2, 2, 2, 3], 2) == 1",
            "assert leftmost_index([], 1) == -1",
            "assert leftmost_index([1, 3, 5], 4) == -1",
            "assert leftmost_index([1, 3, 5], 6) == -1",
            "assert leftmost_index([1, 3, 5], 0) == -1",
            "assert leftmost_index([7] * 1000, 7) == 0",
            "assert leftmost_index(list(range(0, 10**6, 2)), 999998) == 499999",
        ),
    ),
    BuiltinProblem(
        "gcd_of",
        '''def gcd_of(numbers: list[int]) -> int:
    """Return the greatest common divisor of all the numbers, never negative.

    The gcd of an empty list is 0, and 0 is divisible by everything: gcd_of([0, n]) is abs(n).

    >>> gcd_of([4, 10])
    2
    """
''',
        """    result = 0
    for number in numbers:
        a, b = result, abs(number)
        while b:
            a, b = b, a % b
        result = a
    return result
""",
        (
            "assert gcd_of([12, 18, 24]) == 6",
            "assert gcd_of([]) == 0",
            "assert gcd_of([0, 0]) == 0",
            "assert gcd_of([7]) == 7",
            "assert gcd_of([-4, 6]) == 2",
            "assert gcd_of([0, -9]) == 9",
            "assert gcd_of([17, 5]) == 1",
        ),
    ),
    BuiltinProblem(
        "parse_duration",
        '''def parse_duration(text: str) -> int:
    """Convert a duration such as "1h30m" or "45s" to seconds.

    The text is one or more parts, each a whole number followed by a unit: h, m or s. Each unit
    appears at most once, in the order h, m, s, with nothing else in the text (no spaces). Raise
    ValueError for any other text, the empty string included.

    >>> parse_duration("2m3s")
    123
    """
''',
        """    import re

    match = re.fullmatch(r"(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s)?", text)
    if not text or match is None:
        raise ValueError(f"not a duration: {text!r}")
    hours, minutes, seconds = (int(part) if part else 0 for part in match.groups())
    return hours * 3600 + minutes * 60 + seconds
""",
        (
            'assert parse_duration("1h30m") == 5400',
            'assert parse_duration("45s") == 45',
            'assert parse_duration("2h5s") == 7205',
            'assert parse_duration("0m") == 0',
            'assert parse_duration("100m") == 6000',
            "\n".join(
                _raises(f"parse_duration({bad!r})") for bad in ("", "5", "1m1h", "1h1h", "h", "1.5h", " 1h")
            ),
        ),
    ),
    BuiltinProblem(
        "LRUCache",
        '''class LRUCache:
    """A mapping of at most ``capacity`` entries that forgets the least recently used one first.

    - ``LRUCache(capacity)``: raise ValueError when capacity is less than 1;
    - ``get(key, default=None)``: the value stored for key (which counts as a use), else default;
    - ``put(key, value)``: store value for key (a use); when this makes the cache hold more than
      capacity entries, drop the least recently used one;
    - ``len(cache)``: the number of entries.
    """
''',
        """
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._entries: dict = {}

    def get(self, key, default=None):
        if key not in self._entries:
            return default
        value = self._entries.pop(key)
        self._entries[key] = value
        return value

    def put(self, key, value) -> None:
        self._entries.pop(key, None)
        self._entries[key] = value
        if len(self._entries) > self.capacity:
            del self._entries[next(iter(self._entries))]

    def __len__(self) -> int:
        return len(self._entries)
""",
        (
            'cache = LRUCache(2)\ncache.put("a", 1)\nassert cache.get("a") == 1 and cache.get("b") is None',
            'cache = LRUCache(2)\ncache.put("a", 1)\ncache.put("b", 2)\ncache.put("c", 3)\n'
            'assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (None, 2, 3, 2)',
            'cache = LRUCache(2)\ncache.put("a", 1)\ncache.put("b", 2)\ncache.get("a")\ncache.put("c", 3)\n'
            'assert cache.get("b", "gone") == "gone" and cache.get("a") == 1',
            'cache = LRUCache(2)\ncache.put("a", 1)\ncache.put("b", 2)\ncache.put("a", 10)\ncache.put("c", 3)\n'
            'assert (cache.get("a"), cache.get("b"), len(cache)) == (10, None, 2)',
            _raises("LRUCache(0)"),
            "cache = LRUCache(1)\nfor key in range(5):\n    cache.put(key, key * key)\n"
            "assert len(cache) == 1 and cache.get(4) == 16 and cache.get(3, -1) == -1",
        ),
    ),
    BuiltinProblem(
        "dedupe",
        '''def dedupe(items: list) -> list:
    """Return items without repeats, keeping the first occurrence of each value in order.

    Items compare by equality and may be unhashable (lists, dicts).

    >>> dedupe([2, 1, 2])
    [2, 1]
    """
''',
        """    kept: list = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return kept
""",
        (
            "assert dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]",
            "assert dedupe([]) == []",
            'assert dedupe(["a", "A", "a"]) == ["a", "A"]',
            "assert dedupe([[1], [1], [2]]) == [[1], [2]]",
            "assert dedupe([{'k': 1}, {'k': 1}]) == [{'k': 1}]",
            "assert dedupe([1, 1.0, True]) == [1]",
        ),
    ),
    BuiltinProblem(
        "common_prefix",
        '''def common_prefix(words: list[str]) -> str:
    """Return the longest string that every word starts with ("" for an empty list).

    >>> common_prefix(["table", "tablet"])
    'table'
    """
''',
        """    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
""",
        (
            'assert common_prefix(["flower", "flow", "flight"]) == "fl"',
            'assert common_prefix([]) == ""',
            'assert common_prefix(["solo"]) == "solo"',
            'assert common_prefix(["", "a"]) == ""',
            'assert common_prefix(["same", "same"]) == "same"',
            'assert common_prefix(["abc", "abd", "ab"]) == "ab"',
            'assert common_prefix(["x", "y"]) == ""',
        ),
    ),
    BuiltinProblem(
        "anagram_groups",
        '''def anagram_groups(words: list[str]) -> list[list[str]]:
    """Group words that are anagrams of each other (same characters, same counts, case matters).

    Each group is sorted, and the groups are sorted by their first word. Repeated words are kept.

    >>> anagram_groups(["no", "on", "yes"])
    [['no', 'on'], ['yes']]
    """
''',
        """    groups: dict = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return sorted(sorted(group) for group in groups.values())
""",
        (
            'assert anagram_groups(["eat", "tea", "tan", "ate", "nat", "bat"]) == '
            '[["ate", "eat", "tea"], ["bat"], ["nat", "tan"]]',
            "assert anagram_groups([]) == []",
            'assert anagram_groups(["a"]) == [["a"]]',
            'assert anagram_groups(["ab", "ba", "ab"]) == [["ab", "ab", "ba"]]',
            'assert anagram_groups(["Ab", "ab"]) == [["Ab"], ["ab"]]',
            'assert anagram_groups(["", ""]) == [["", ""]]',
        ),
    ),
    BuiltinProblem(
        "hanoi",
        '''def hanoi(n: int, source: str, target: str, spare: str) -> list[tuple[str, str]]:
    """Return the shortest list of (from_peg, to_peg) moves that carries n discs from source to target.

    One disc moves at a time and never onto a smaller disc; spare is the third peg.

    >>> hanoi(1, "L", "R", "M")
    [('L', 'R')]
    """
''',
        """    if n <= 0:
        return []
    return hanoi(n - 1, source, spare, target) + [(source, target)] + hanoi(n - 1, spare, target, source)
""",
        (
            'assert hanoi(0, "A", "C", "B") == []',
            'assert hanoi(2, "A", "C", "B") == [("A", "B"), ("A", "C"), ("B", "C")]',
            'assert len(hanoi(10, "A", "C", "B")) == 1023',
            'pegs = {"A": [5, 4, 3, 2, 1], "B": [], "C": []}\n'
            'for start, end in hanoi(5, "A", "C", "B"):\n'
            "    disc = pegs[start].pop()\n"
            "    assert not pegs[end] or pegs[end][-1] > disc\n"
            "    pegs[end].append(disc)\n"
            'assert pegs == {"A": [], "B": [], "C": [5, 4, 3, 2, 1]}',
            'assert hanoi(3, "x", "y", "z")[3] == ("x", "y")',
        ),
    ),
    BuiltinProblem(
        "nested_get",
        '''def nested_get(data, path: str, default=None):
    """Follow a dotted path through nested dicts and lists and return the value found.

    Each part of the path is a key of a dict, or, for a list, an integer index (negative ones
    count from the end). Return default when a part cannot be followed. The empty path gives data.

    >>> nested_get({"a": [{"b": 1}]}, "a.0.b")
    1
    """
''',
        """    if path == "":
        return data
    current = data
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list):
            try:
                current = current[int(part)]
            except (ValueError, IndexError):
                return default
        else:
            return default
    return current
""",
        (
            'assert nested_get({"a": {"b": [10, 20, {"c": 5}]}}, "a.b.2.c") == 5',
            'assert nested_get({"a": [1, 2]}, "a.-1") == 2',
            'assert nested_get({"a": 1}, "b") is None',
            'assert nested_get({"a": 1}, "b", 0) == 0',
            'assert nested_get({"a": [1]}, "a.5", "none") == "none"',
            'assert nested_get({"a": [1]}, "a.x", "bad") == "bad"',
            'assert nested_get({"x": 1}, "") == {"x": 1}',
            'assert nested_get({"a": 5}, "a.b", "d") == "d"',
        ),
    ),
    BuiltinProblem(
        "eval_rpn",
        '''def eval_rpn(tokens: list[str]) -> int:
    """Evaluate an integer expression in reverse Polish notation, such as ["2", "3", "+"].

    Operators are +, -, * and /, where / divides and truncates toward zero. Raise ValueError when
    the tokens do not form exactly one expression.

    >>> eval_rpn(["6", "2", "-"])
    4
    """
''',
        """    stack: list[int] = []
    for token in tokens:
        if token in ("+", "-", "*", "/"):
            if len(stack) < 2:
                raise ValueError("an operator lacks operands")
            right, left = stack.pop(), stack.pop()
            if token == "+":
                stack.append(left + right)
            elif token == "-":
                stack.append(left - right)
            elif token == "*":
                stack.append(left * right)
            else:
                quotient = abs(left) // abs(right)
                stack.append(quotient if (left < 0) == (right < 0) else -quotient)
        else:
            stack.append(int(token))
    if len(stack) != 1:
        raise ValueError("the tokens do not form one expression")
    return stack[0]
""",
        (
            'assert eval_rpn(["2", "1", "+", "3", "*"]) == 9',
            'assert eval_rpn(["4", "13", "5", "/", "+"]) == 6',
            'assert eval_rpn(["7", "-2", "/"]) == -3',
            'assert eval_rpn(["-7", "2", "/"]) == -3',
            'assert eval_rpn(["5"]) == 5',
            _raises('eval_rpn(["1", "+"])'),
            _raises('eval_rpn(["1", "2"])') + "\n" + _raises("eval_rpn([])"),
        ),
    ),
)


def builtin_tasks() -> tuple[CodeTask, ...]:
    """The built-in problems as tasks, with ids ``mrlm-code/0``, ``mrlm-code/1``, ..."""
    tasks = []
    for index, problem in enumerate(PROBLEMS):
        task = CodeTask(
            task_id=f"mrlm-code/{index}",
            entry_point=problem.entry_point,
            description="",
            prompt_code=problem.prompt,
            test_setup=code_before_definition(problem.prompt, problem.entry_point),
            steps=tuple(TestStep(test) for test in problem.tests),
            canonical_solution=problem.prompt + problem.solution,
            source="builtin",
        )
        tasks.append(task)
    return tuple(tasks)
