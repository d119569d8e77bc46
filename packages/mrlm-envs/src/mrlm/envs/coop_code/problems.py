"""The built-in problems of ``mrlm/CoopCode-v0``, written for this project.

Each problem splits a small program into functions that call one another: helpers, and a main
function (last) that the tests call. Nine have two parts and three have three, for teams of that
size. Every part has a reference body; the tests of this package prove that the reference parts pass
and that the main part fails without its helpers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mrlm.envs.code.tasks import CodeTask, TestStep
from mrlm.envs.coop_code.tasks import CoopTask, Part


@dataclass(frozen=True)
class _Spec:
    """One problem: ``parts`` are ``(stub, reference body, uses)``; tests call the last part."""

    description: str
    parts: tuple[tuple[str, str, tuple[str, ...]], ...]
    tests: tuple[str, ...]
    context: str = ""


def _raises(call: str, error: str = "ValueError") -> str:
    return f"try:\n    {call}\nexcept {error}:\n    pass\nelse:\n    raise AssertionError({call!r} + ' must raise {error}')"


PROBLEMS: tuple[_Spec, ...] = (
    _Spec(
        "Sum the primes up to a limit.",
        (
            (
                'def is_prime(n: int) -> bool:\n    """True when n is prime; numbers below 2 are not."""\n',
                "    if n < 2:\n        return False\n    divisor = 2\n    while divisor * divisor <= n:\n"
                "        if n % divisor == 0:\n            return False\n        divisor += 1\n    return True\n",
                (),
            ),
            (
                "def sum_of_primes(limit: int) -> int:\n"
                '    """The sum of the primes up to and including limit (0 when there are none).\n\n'
                '    >>> sum_of_primes(10)\n    17\n    """\n',
                "    return sum(n for n in range(2, limit + 1) if is_prime(n))\n",
                ("is_prime",),
            ),
        ),
        (
            "assert sum_of_primes(10) == 17",
            "assert sum_of_primes(2) == 2",
            "assert sum_of_primes(1) == 0",
            "assert sum_of_primes(-5) == 0",
            "assert sum_of_primes(30) == 129",
            "assert sum_of_primes(100) == 1060",
        ),
    ),
    _Spec(
        "Reduce a number to one digit by summing its digits again and again.",
        (
            (
                'def digit_sum(n: int) -> int:\n    """The sum of the decimal digits of n (never negative)."""\n',
                "    return sum(int(digit) for digit in str(n))\n",
                (),
            ),
            (
                "def digital_root(n: int) -> int:\n"
                '    """Replace n (never negative) by the sum of its digits until one digit is left.\n\n'
                '    >>> digital_root(49)\n    4\n    """\n',
                "    while n >= 10:\n        n = digit_sum(n)\n    return n\n",
                ("digit_sum",),
            ),
        ),
        (
            "assert digital_root(0) == 0",
            "assert digital_root(7) == 7",
            "assert digital_root(38) == 2",
            "assert digital_root(99999) == 9",
            "assert digital_root(10) == 1",
            "assert digital_root(10**20 + 5) == 6",
        ),
    ),
    _Spec(
        "Tell whether a phrase is a palindrome, looking at its letters only.",
        (
            (
                "def letters_only(text: str) -> str:\n"
                '    """The letters of text, lowercased, in order; every other character is dropped."""\n',
                '    return "".join(char.lower() for char in text if char.isalpha())\n',
                (),
            ),
            (
                "def is_palindrome_phrase(text: str) -> bool:\n"
                '    """True when the letters of text read the same both ways, ignoring case.\n\n'
                '    A text without letters counts as a palindrome.\n    """\n',
                "    letters = letters_only(text)\n    return letters == letters[::-1]\n",
                ("letters_only",),
            ),
        ),
        (
            'assert is_palindrome_phrase("A man, a plan, a canal: Panama") is True',
            'assert is_palindrome_phrase("Hello") is False',
            'assert is_palindrome_phrase("") is True',
            "assert is_palindrome_phrase(\"No 'x' in Nixon\") is True",
            'assert is_palindrome_phrase("ab") is False',
            'assert is_palindrome_phrase("12 3 4") is True',
            'assert is_palindrome_phrase("Abc, cba!") is True',
        ),
    ),
    _Spec(
        "Tell whether two texts are anagrams of each other.",
        (
            (
                "def letter_counts(text: str) -> dict[str, int]:\n"
                '    """How often each letter occurs in text, case-insensitively, keyed by the lowercase letter.\n\n'
                '    Characters that are not letters are not counted.\n    """\n',
                "    counts: dict[str, int] = {}\n    for char in text.lower():\n        if char.isalpha():\n"
                "            counts[char] = counts.get(char, 0) + 1\n    return counts\n",
                (),
            ),
            (
                "def are_anagrams(first: str, second: str) -> bool:\n"
                '    """True when both texts use the same letters equally often, ignoring case, spaces and\n'
                '    punctuation."""\n',
                "    return letter_counts(first) == letter_counts(second)\n",
                ("letter_counts",),
            ),
        ),
        (
            'assert are_anagrams("listen", "silent") is True',
            'assert are_anagrams("Dormitory", "dirty room!") is True',
            'assert are_anagrams("abc", "abd") is False',
            'assert are_anagrams("", "") is True',
            'assert are_anagrams("aab", "abb") is False',
            'assert are_anagrams("A gentleman", "Elegant man") is True',
        ),
    ),
    _Spec(
        "Compute the least common multiple of a list of numbers.",
        (
            (
                "def gcd(a: int, b: int) -> int:\n"
                '    """The greatest common divisor of two non-negative ints; gcd(0, 0) is 0."""\n',
                "    while b:\n        a, b = b, a % b\n    return a\n",
                (),
            ),
            (
                "def lcm_of_list(numbers: list[int]) -> int:\n"
                '    """The least common multiple of positive ints; 1 for an empty list."""\n',
                "    result = 1\n    for number in numbers:\n        result = result * number // gcd(result, number)\n"
                "    return result\n",
                ("gcd",),
            ),
        ),
        (
            "assert lcm_of_list([4, 6]) == 12",
            "assert lcm_of_list([]) == 1",
            "assert lcm_of_list([5]) == 5",
            "assert lcm_of_list([2, 3, 4]) == 12",
            "assert lcm_of_list([7, 11, 13]) == 1001",
            "assert lcm_of_list([6, 10, 15]) == 30",
        ),
    ),
    _Spec(
        "Add up the lengths of time intervals written on a 24-hour clock.",
        (
            (
                "def to_minutes(clock: str) -> int:\n"
                '    """Minutes since midnight of a time written "H:MM" or "HH:MM" (24-hour clock)."""\n',
                '    hours, minutes = clock.split(":")\n    return int(hours) * 60 + int(minutes)\n',
                (),
            ),
            (
                "def total_minutes(intervals: list[tuple[str, str]]) -> int:\n"
                '    """The total length in minutes of (start, end) intervals within one day.\n\n'
                '    No end is earlier than its start.\n\n    >>> total_minutes([("9:00", "10:30")])\n'
                '    90\n    """\n',
                "    return sum(to_minutes(end) - to_minutes(start) for start, end in intervals)\n",
                ("to_minutes",),
            ),
        ),
        (
            'assert total_minutes([("9:00", "10:30")]) == 90',
            "assert total_minutes([]) == 0",
            'assert total_minutes([("08:15", "08:20"), ("13:00", "14:00")]) == 65',
            'assert total_minutes([("0:00", "23:59")]) == 1439',
            'assert total_minutes([("12:00", "12:00")]) == 0',
        ),
    ),
    _Spec(
        "Evaluate sums and differences of whole numbers written as text.",
        (
            (
                "def tokens(expression: str) -> list[str]:\n"
                '    """Split an expression of non-negative integers joined by + and - into numbers and signs,\n'
                "    dropping spaces.\n\n    >>> tokens(\"12 + 3-4\")\n    ['12', '+', '3', '-', '4']\n"
                '    """\n',
                '    result: list[str] = []\n    number = ""\n    for char in expression:\n'
                "        if char.isdigit():\n            number += char\n"
                '        elif char in "+-":\n            if number:\n                result.append(number)\n'
                '                number = ""\n            result.append(char)\n'
                "    if number:\n        result.append(number)\n    return result\n",
                (),
            ),
            (
                "def evaluate(expression: str) -> int:\n"
                '    """The value of non-negative integers joined by + and -, from left to right.\n\n'
                '    >>> evaluate("12 + 3-4")\n    11\n    """\n',
                "    total = 0\n    sign = 1\n    for token in tokens(expression):\n"
                '        if token == "+":\n            sign = 1\n        elif token == "-":\n'
                "            sign = -1\n        else:\n            total += sign * int(token)\n    return total\n",
                ("tokens",),
            ),
        ),
        (
            'assert evaluate("12 + 3-4") == 11',
            'assert evaluate("7") == 7',
            'assert evaluate("10-20") == -10',
            'assert evaluate("1+2+3+4") == 10',
            'assert evaluate(" 100 - 1 - 1 ") == 98',
            'assert evaluate("0") == 0',
        ),
    ),
    _Spec(
        "Find the longest run of equal neighbouring values in a list.",
        (
            (
                "def runs(values: list) -> list[tuple[object, int]]:\n"
                '    """Group equal neighbouring values: each run as (value, length), in order.\n\n'
                '    >>> runs([1, 1, 2])\n    [(1, 2), (2, 1)]\n    """\n',
                "    groups: list[tuple[object, int]] = []\n    for value in values:\n"
                "        if groups and groups[-1][0] == value:\n"
                "            groups[-1] = (value, groups[-1][1] + 1)\n        else:\n"
                "            groups.append((value, 1))\n    return groups\n",
                (),
            ),
            (
                "def longest_run(values: list) -> int:\n"
                '    """The length of the longest run of equal neighbouring values; 0 for an empty list."""\n',
                "    return max((length for _, length in runs(values)), default=0)\n",
                ("runs",),
            ),
        ),
        (
            "assert longest_run([1, 1, 2, 2, 2, 1]) == 3",
            "assert longest_run([]) == 0",
            'assert longest_run(["a"]) == 1',
            "assert longest_run([3, 3, 3, 3]) == 4",
            "assert longest_run([1, 2, 1, 2]) == 1",
            "assert longest_run([0, 0, 1, 1, 1, 0, 0, 0, 0]) == 4",
        ),
    ),
    _Spec(
        "Tell whether a square matrix is symmetric.",
        (
            (
                "def transpose(matrix: list[list[int]]) -> list[list[int]]:\n"
                '    """The transpose of a rectangular matrix given as a list of rows ([] stays [])."""\n',
                "    return [list(column) for column in zip(*matrix)]\n",
                (),
            ),
            (
                "def is_symmetric(matrix: list[list[int]]) -> bool:\n"
                '    """True when a square matrix (a list of rows) equals its transpose."""\n',
                "    return matrix == transpose(matrix)\n",
                ("transpose",),
            ),
        ),
        (
            "assert is_symmetric([[1, 2], [2, 1]]) is True",
            "assert is_symmetric([[1, 2], [3, 4]]) is False",
            "assert is_symmetric([]) is True",
            "assert is_symmetric([[5]]) is True",
            "assert is_symmetric([[1, 0, 3], [0, 2, 0], [3, 0, 1]]) is True",
            "assert is_symmetric([[1, 2, 3], [2, 1, 0], [3, 1, 1]]) is False",
        ),
    ),
    _Spec(
        "List the most frequent words of a text.",
        (
            (
                "def clean_word(word: str) -> str:\n"
                '    """The word lowercased, with the punctuation (string.punctuation) at both ends removed."""\n',
                "    return word.strip(string.punctuation).lower()\n",
                (),
            ),
            (
                "def word_counts(text: str) -> dict[str, int]:\n"
                '    """How often each word occurs: words are split on whitespace and cleaned with\n'
                '    clean_word; words that are empty once cleaned are skipped."""\n',
                "    counts: dict[str, int] = {}\n    for word in text.split():\n"
                "        cleaned = clean_word(word)\n        if cleaned:\n"
                "            counts[cleaned] = counts.get(cleaned, 0) + 1\n    return counts\n",
                ("clean_word",),
            ),
            (
                "def top_words(text: str, k: int) -> list[str]:\n"
                '    """The k most frequent words of text (as counted by word_counts), most frequent first,\n'
                '    ties in alphabetical order."""\n',
                "    counts = word_counts(text)\n    return sorted(counts, key=lambda word: (-counts[word], word))[:k]\n",
                ("word_counts",),
            ),
        ),
        (
            'assert top_words("the cat and the hat", 1) == ["the"]',
            'assert top_words("b a b a c", 2) == ["a", "b"]',
            'assert top_words("", 3) == []',
            'assert top_words("Hello, hello! World.", 2) == ["hello", "world"]',
            'assert top_words("x y z", 5) == ["x", "y", "z"]',
            'assert top_words("-- ok --", 2) == ["ok"]',
        ),
        context="import string\n",
    ),
    _Spec(
        "Report the warmest of some temperature readings in degrees Fahrenheit.",
        (
            (
                "def parse_reading(reading: str) -> float:\n"
                '    """The temperature of a reading such as "21.5C" or " -3c ", in degrees Celsius."""\n',
                '    return float(reading.strip().rstrip("Cc"))\n',
                (),
            ),
            (
                "def to_fahrenheit(celsius: float) -> float:\n"
                '    """Degrees Celsius converted to degrees Fahrenheit."""\n',
                "    return celsius * 9 / 5 + 32\n",
                (),
            ),
            (
                "def warmest_fahrenheit(readings: list[str]) -> float:\n"
                '    """The warmest reading in degrees Fahrenheit, rounded to one decimal.\n\n'
                '    Raise ValueError when there are no readings.\n    """\n',
                '    if not readings:\n        raise ValueError("no readings")\n'
                "    warmest = max(parse_reading(reading) for reading in readings)\n"
                "    return round(to_fahrenheit(warmest), 1)\n",
                ("parse_reading", "to_fahrenheit"),
            ),
        ),
        (
            'assert warmest_fahrenheit(["21.5C", "-3C", "30C"]) == 86.0',
            'assert warmest_fahrenheit(["0C"]) == 32.0',
            'assert warmest_fahrenheit(["-40C", "-41C"]) == -40.0',
            'assert warmest_fahrenheit(["37C"]) == 98.6',
            'assert warmest_fahrenheit(["  10c "]) == 50.0',
            _raises("warmest_fahrenheit([])"),
        ),
    ),
    _Spec(
        "Find the word with the most vowels.",
        (
            (
                'def is_vowel(char: str) -> bool:\n    """True for one of the letters a, e, i, o, u, in either case."""\n',
                '    return len(char) == 1 and char.lower() in "aeiou"\n',
                (),
            ),
            (
                'def vowel_count(word: str) -> int:\n    """How many characters of word are vowels (by is_vowel)."""\n',
                "    return sum(1 for char in word if is_vowel(char))\n",
                ("is_vowel",),
            ),
            (
                "def most_vowels(words: list[str]) -> str:\n"
                '    """The word with the most vowels (by vowel_count), the first one on a tie; "" for no words."""\n',
                '    best = ""\n    best_count = -1\n    for word in words:\n        count = vowel_count(word)\n'
                "        if count > best_count:\n            best, best_count = word, count\n    return best\n",
                ("vowel_count",),
            ),
        ),
        (
            'assert most_vowels(["sky", "tree", "queue"]) == "queue"',
            'assert most_vowels([]) == ""',
            'assert most_vowels(["bcd", "fgh"]) == "bcd"',
            'assert most_vowels(["Aa", "ee"]) == "Aa"',
            'assert most_vowels(["rhythm", "AEIOU", "eau"]) == "AEIOU"',
        ),
    ),
)

_NAME = re.compile(r"def\s+(\w+)")


def _name(stub: str) -> str:
    match = _NAME.match(stub)
    if match is None:
        raise ValueError(f"a stub must start with a def: {stub[:40]!r}")
    return match.group(1)


def builtin_problems() -> tuple[CoopTask, ...]:
    """The built-in problems as tasks, with ids ``mrlm-coop/0``, ``mrlm-coop/1``, ..."""
    tasks = []
    for index, spec in enumerate(PROBLEMS):
        task_id = f"mrlm-coop/{index}"
        parts = tuple(Part(_name(stub), stub=stub, uses=uses) for stub, _, uses in spec.parts)
        tests = CodeTask(
            task_id=task_id,
            entry_point=parts[-1].name,
            description=spec.description,
            prompt_code=spec.parts[-1][0],
            test_setup=spec.context,
            steps=tuple(TestStep(test) for test in spec.tests),
        )
        tasks.append(
            CoopTask(
                task_id=task_id,
                description=spec.description,
                parts=parts,
                tests=tests,
                context=spec.context,
                solution=tuple(stub + body for stub, body, _ in spec.parts),
            )
        )
    return tuple(tasks)
