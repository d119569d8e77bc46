"""The built-in classes of ``mrlm/ClassCompletion-v0``, written for this project as ClassEval records.

Five small classes of four methods each, with a ``unittest`` class per method and one that uses the
methods together, as ClassEval lays its tasks out. The records are built from the pieces below, so
they load through the same code as ClassEval's own; the tests of this package prove that the
reference methods pass and that the stubs do not.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import cache
from typing import Any

from mrlm.envs.class_completion.classeval import class_task
from mrlm.envs.class_completion.tasks import ClassTask


@dataclass(frozen=True)
class _Method:
    """A method: its stub (signature and docstring), its reference body, tests and dependencies."""

    stub: str
    body: str
    tests: tuple[str, ...]
    uses: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.stub.split("(", 1)[0].removeprefix("def ").strip()


@dataclass(frozen=True)
class _Class:
    name: str
    description: str
    imports: tuple[str, ...]
    constructor: str
    fields: tuple[str, ...]
    methods: tuple[_Method, ...]
    together: tuple[str, ...]


def _camel(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_"))


def _indent(code: str) -> str:
    return textwrap.indent(code, "    ", lambda line: bool(line.strip()))


def _record(index: int, spec: _Class) -> dict[str, Any]:
    """``spec`` as a ClassEval record."""
    docstring = f'    """\n    {spec.description}\n    """\n'
    header = "".join(f"{line}\n" for line in spec.imports) + ("\n\n" if spec.imports else "")
    constructor = _indent(spec.constructor)
    skeleton = header + f"class {spec.name}:\n" + docstring + "\n" + constructor
    solution = header + f"class {spec.name}:\n" + constructor
    test_classes, test_codes = [], []
    for method in spec.methods:
        skeleton += "\n" + _indent(method.stub)
        solution += "\n" + _indent(method.stub + method.body)
        test_class = f"{spec.name}Test{_camel(method.name)}"
        test_classes.append(test_class)
        tests = "\n".join(_indent(test) for test in method.tests)
        test_codes.append(f"class {test_class}(unittest.TestCase):\n{tests}")
    test_classes.append(f"{spec.name}Test")
    test_codes.append(
        f"class {spec.name}Test(unittest.TestCase):\n" + "\n".join(_indent(t) for t in spec.together)
    )
    return {
        "task_id": f"mrlm-class/{index}",
        "skeleton": skeleton,
        "test": "import unittest\n\n\n" + "\n\n".join(test_codes),
        "solution_code": solution,
        "import_statement": list(spec.imports),
        "class_description": docstring,
        "methods_info": [
            {
                "method_name": method.name,
                "method_description": method.stub,
                "test_class": test_class,
                "test_code": test_code,
                "solution_code": method.stub + method.body,
                "dependencies": {
                    "Standalone": not method.uses,
                    "lib_dependencies": [],
                    "field_dependencies": list(spec.fields),
                    "method_dependencies": list(method.uses),
                },
            }
            for method, test_class, test_code in zip(spec.methods, test_classes, test_codes, strict=False)
        ],
        "class_name": spec.name,
        "test_classes": test_classes,
        "class_constructor": f"class {spec.name}:\n{constructor}",
        "fields": list(spec.fields),
    }


CLASSES: tuple[_Class, ...] = (
    _Class(
        "Inventory",
        "A stock of named items and their quantities.",
        (),
        "def __init__(self):\n    self.stock = {}\n",
        ("self.stock",),
        (
            _Method(
                'def add_item(self, name, quantity):\n    """\n    Add quantity (a positive int) of the item name to '
                'the stock.\n    :return: int, the new quantity of name\n    """\n',
                "    self.stock[name] = self.stock.get(name, 0) + quantity\n    return self.stock[name]\n",
                (
                    "def test_add_item_1(self):\n    inventory = Inventory()\n"
                    "    self.assertEqual(inventory.add_item('apple', 3), 3)\n",
                    "def test_add_item_2(self):\n    inventory = Inventory()\n    inventory.add_item('apple', 3)\n"
                    "    self.assertEqual(inventory.add_item('apple', 2), 5)\n"
                    "    self.assertEqual(inventory.stock, {'apple': 5})\n",
                ),
            ),
            _Method(
                'def remove_item(self, name, quantity):\n    """\n    Take quantity of the item name out of the stock '
                "when there is enough; an item whose\n    quantity drops to 0 leaves the stock.\n"
                '    :return: bool, True when removed, False (the stock unchanged) otherwise\n    """\n',
                "    available = self.stock.get(name, 0)\n    if quantity > available:\n        return False\n"
                "    if quantity == available:\n        del self.stock[name]\n    else:\n"
                "        self.stock[name] = available - quantity\n    return True\n",
                (
                    "def test_remove_item_1(self):\n    inventory = Inventory()\n    inventory.stock = {'pear': 4}\n"
                    "    self.assertTrue(inventory.remove_item('pear', 1))\n"
                    "    self.assertEqual(inventory.stock, {'pear': 3})\n",
                    "def test_remove_item_2(self):\n    inventory = Inventory()\n    inventory.stock = {'pear': 4}\n"
                    "    self.assertFalse(inventory.remove_item('pear', 5))\n"
                    "    self.assertFalse(inventory.remove_item('plum', 1))\n"
                    "    self.assertEqual(inventory.stock, {'pear': 4})\n",
                    "def test_remove_item_3(self):\n    inventory = Inventory()\n    inventory.stock = {'pear': 4}\n"
                    "    self.assertTrue(inventory.remove_item('pear', 4))\n    self.assertEqual(inventory.stock, {})\n",
                ),
            ),
            _Method(
                'def quantity(self, name):\n    """\n    :return: int, how many of the item name are in stock '
                '(0 when none)\n    """\n',
                "    return self.stock.get(name, 0)\n",
                (
                    "def test_quantity_1(self):\n    inventory = Inventory()\n    inventory.stock = {'fig': 7}\n"
                    "    self.assertEqual(inventory.quantity('fig'), 7)\n",
                    "def test_quantity_2(self):\n    self.assertEqual(Inventory().quantity('fig'), 0)\n",
                ),
            ),
            _Method(
                'def most_stocked(self):\n    """\n    :return: str or None, the item with the largest quantity, the '
                'alphabetically first\n    on a tie; None when the stock is empty\n    """\n',
                "    if not self.stock:\n        return None\n"
                "    return min(self.stock, key=lambda name: (-self.stock[name], name))\n",
                (
                    "def test_most_stocked_1(self):\n    inventory = Inventory()\n"
                    "    inventory.stock = {'kiwi': 2, 'lime': 9, 'date': 9}\n"
                    "    self.assertEqual(inventory.most_stocked(), 'date')\n",
                    "def test_most_stocked_2(self):\n    self.assertIsNone(Inventory().most_stocked())\n",
                ),
            ),
        ),
        (
            "def test_inventory(self):\n    inventory = Inventory()\n    inventory.add_item('nut', 5)\n"
            "    inventory.add_item('bolt', 2)\n    self.assertTrue(inventory.remove_item('nut', 4))\n"
            "    self.assertEqual(inventory.quantity('nut'), 1)\n"
            "    self.assertEqual(inventory.most_stocked(), 'bolt')\n",
        ),
    ),
    _Class(
        "TextStats",
        "Statistics of the words of a text.",
        ("import string",),
        "def __init__(self, text):\n    self.text = text\n",
        ("self.text",),
        (
            _Method(
                'def words(self):\n    """\n    :return: list of str, the words of the text in order, lowercased, '
                "with the\n    punctuation (string.punctuation) at both ends removed; words left empty are "
                'dropped\n    """\n',
                "    cleaned = (word.strip(string.punctuation).lower() for word in self.text.split())\n"
                "    return [word for word in cleaned if word]\n",
                (
                    "def test_words_1(self):\n"
                    "    self.assertEqual(TextStats('Hello, World! hello').words(), ['hello', 'world', 'hello'])\n",
                    "def test_words_2(self):\n    self.assertEqual(TextStats(' -- ').words(), [])\n",
                ),
            ),
            _Method(
                'def word_count(self):\n    """\n    :return: int, the number of words, as given by words\n    """\n',
                "    return len(self.words())\n",
                (
                    "def test_word_count_1(self):\n    self.assertEqual(TextStats('a b, c!').word_count(), 3)\n",
                    "def test_word_count_2(self):\n    self.assertEqual(TextStats('').word_count(), 0)\n",
                ),
                ("words",),
            ),
            _Method(
                'def unique_words(self):\n    """\n    :return: list of str, the distinct words in alphabetical order'
                '\n    """\n',
                "    return sorted(set(self.words()))\n",
                (
                    "def test_unique_words_1(self):\n"
                    "    self.assertEqual(TextStats('b a B c a').unique_words(), ['a', 'b', 'c'])\n",
                    "def test_unique_words_2(self):\n    self.assertEqual(TextStats('...').unique_words(), [])\n",
                ),
                ("words",),
            ),
            _Method(
                'def longest_word(self):\n    """\n    :return: str, the longest word, the first one on a tie; "" '
                'without words\n    """\n',
                '    best = ""\n    for word in self.words():\n        if len(word) > len(best):\n'
                "            best = word\n    return best\n",
                (
                    "def test_longest_word_1(self):\n"
                    "    self.assertEqual(TextStats('ant bee wasp moth').longest_word(), 'wasp')\n",
                    "def test_longest_word_2(self):\n    self.assertEqual(TextStats('').longest_word(), '')\n",
                ),
                ("words",),
            ),
        ),
        (
            "def test_text_stats(self):\n    stats = TextStats('The cat saw the other cat.')\n"
            "    self.assertEqual(stats.word_count(), 6)\n"
            "    self.assertEqual(stats.unique_words(), ['cat', 'other', 'saw', 'the'])\n"
            "    self.assertEqual(stats.longest_word(), 'other')\n",
        ),
    ),
    _Class(
        "BankAccount",
        "An account with a balance and a history of its operations.",
        (),
        "def __init__(self, balance=0):\n    self.balance = balance\n    self.history = []\n",
        ("self.balance", "self.history"),
        (
            _Method(
                'def deposit(self, amount):\n    """\n    Add amount to the balance and append ("deposit", amount) to the '
                "history.\n    :raises ValueError: when amount is not positive\n    :return: the new balance\n"
                '    """\n',
                '    if amount <= 0:\n        raise ValueError("amount must be positive")\n'
                "    self.balance += amount\n    self.history.append(('deposit', amount))\n    return self.balance\n",
                (
                    "def test_deposit_1(self):\n    account = BankAccount(10)\n"
                    "    self.assertEqual(account.deposit(5), 15)\n"
                    "    self.assertEqual(account.history, [('deposit', 5)])\n",
                    "def test_deposit_2(self):\n    account = BankAccount()\n"
                    "    with self.assertRaises(ValueError):\n        account.deposit(0)\n"
                    "    self.assertEqual(account.balance, 0)\n",
                ),
            ),
            _Method(
                'def withdraw(self, amount):\n    """\n    Take amount from the balance when the balance covers it, '
                'appending\n    ("withdraw", amount) to the history.\n    :raises ValueError: when amount is not '
                "positive\n    :return: bool, True when withdrawn; False (nothing changes) when the balance is too "
                'low\n    """\n',
                '    if amount <= 0:\n        raise ValueError("amount must be positive")\n'
                "    if amount > self.balance:\n        return False\n    self.balance -= amount\n"
                "    self.history.append(('withdraw', amount))\n    return True\n",
                (
                    "def test_withdraw_1(self):\n    account = BankAccount(50)\n"
                    "    self.assertTrue(account.withdraw(20))\n    self.assertEqual(account.balance, 30)\n"
                    "    self.assertEqual(account.history, [('withdraw', 20)])\n",
                    "def test_withdraw_2(self):\n    account = BankAccount(5)\n"
                    "    self.assertFalse(account.withdraw(6))\n    self.assertEqual(account.balance, 5)\n"
                    "    self.assertEqual(account.history, [])\n",
                    "def test_withdraw_3(self):\n    with self.assertRaises(ValueError):\n"
                    "        BankAccount(5).withdraw(-1)\n",
                ),
            ),
            _Method(
                'def apply_interest(self, rate):\n    """\n    Add rate (a fraction such as 0.05) of the balance, rounded to '
                '2 decimals, to the\n    balance, appending ("interest", added) to the history.\n'
                '    :return: the amount added\n    """\n',
                "    added = round(self.balance * rate, 2)\n    self.balance += added\n"
                "    self.history.append(('interest', added))\n    return added\n",
                (
                    "def test_apply_interest_1(self):\n    account = BankAccount(200)\n"
                    "    self.assertEqual(account.apply_interest(0.05), 10.0)\n"
                    "    self.assertEqual(account.balance, 210.0)\n",
                    "def test_apply_interest_2(self):\n    account = BankAccount(33)\n"
                    "    self.assertEqual(account.apply_interest(0.1), 3.3)\n"
                    "    self.assertEqual(account.history, [('interest', 3.3)])\n",
                ),
            ),
            _Method(
                'def statement(self):\n    """\n    :return: list of str, one line "<kind> <amount>" per history '
                'entry, in order,\n    such as "deposit 100"\n    """\n',
                "    return [f'{kind} {amount}' for kind, amount in self.history]\n",
                (
                    "def test_statement_1(self):\n    account = BankAccount()\n"
                    "    account.history = [('deposit', 100), ('withdraw', 30)]\n"
                    "    self.assertEqual(account.statement(), ['deposit 100', 'withdraw 30'])\n",
                    "def test_statement_2(self):\n    self.assertEqual(BankAccount(9).statement(), [])\n",
                ),
            ),
        ),
        (
            "def test_bank_account(self):\n    account = BankAccount()\n    account.deposit(100)\n"
            "    self.assertFalse(account.withdraw(150))\n    self.assertTrue(account.withdraw(40))\n"
            "    account.apply_interest(0.5)\n"
            "    self.assertEqual(account.statement(), ['deposit 100', 'withdraw 40', 'interest 30.0'])\n",
        ),
    ),
    _Class(
        "GridBoard",
        "A board of width x height cells, each empty or holding a mark.",
        (),
        "def __init__(self, width, height):\n    self.width = width\n    self.height = height\n    self.cells = {}\n",
        ("self.width", "self.height", "self.cells"),
        (
            _Method(
                'def place(self, x, y, mark):\n    """\n    Put mark in the cell (x, y), x in [0, width) and y in [0, height).'
                "\n    :return: bool, False (nothing changes) when the cell is outside the board or taken,\n"
                '    True otherwise\n    """\n',
                "    if not (0 <= x < self.width and 0 <= y < self.height) or (x, y) in self.cells:\n"
                "        return False\n    self.cells[(x, y)] = mark\n    return True\n",
                (
                    "def test_place_1(self):\n    board = GridBoard(3, 2)\n    self.assertTrue(board.place(2, 1, 'X'))\n"
                    "    self.assertEqual(board.cells, {(2, 1): 'X'})\n",
                    "def test_place_2(self):\n    board = GridBoard(3, 2)\n    board.place(0, 0, 'X')\n"
                    "    self.assertFalse(board.place(0, 0, 'O'))\n    self.assertFalse(board.place(3, 0, 'O'))\n"
                    "    self.assertFalse(board.place(0, -1, 'O'))\n    self.assertEqual(board.cells, {(0, 0): 'X'})\n",
                ),
            ),
            _Method(
                'def get(self, x, y):\n    """\n    :return: the mark in the cell (x, y), or None when it is empty or '
                'outside the board\n    """\n',
                "    return self.cells.get((x, y))\n",
                (
                    "def test_get_1(self):\n    board = GridBoard(2, 2)\n    board.cells[(1, 0)] = 'O'\n"
                    "    self.assertEqual(board.get(1, 0), 'O')\n",
                    "def test_get_2(self):\n    board = GridBoard(2, 2)\n    self.assertIsNone(board.get(0, 1))\n"
                    "    self.assertIsNone(board.get(5, 5))\n",
                ),
            ),
            _Method(
                'def neighbors(self, x, y):\n    """\n    :return: list of (x, y), the cells of the board next to (x, y) '
                'horizontally,\n    vertically or diagonally, sorted\n    """\n',
                "    around = [(x + dx, y + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]\n"
                "    return sorted((a, b) for a, b in around if 0 <= a < self.width and 0 <= b < self.height)\n",
                (
                    "def test_neighbors_1(self):\n"
                    "    self.assertEqual(GridBoard(3, 3).neighbors(0, 0), [(0, 1), (1, 0), (1, 1)])\n",
                    "def test_neighbors_2(self):\n    self.assertEqual(len(GridBoard(3, 3).neighbors(1, 1)), 8)\n",
                    "def test_neighbors_3(self):\n    self.assertEqual(GridBoard(1, 1).neighbors(0, 0), [])\n",
                ),
            ),
            _Method(
                'def count(self, mark):\n    """\n    :return: int, how many cells hold mark\n    """\n',
                "    return sum(1 for value in self.cells.values() if value == mark)\n",
                (
                    "def test_count_1(self):\n    board = GridBoard(4, 4)\n"
                    "    board.cells = {(0, 0): 'X', (1, 1): 'O', (2, 2): 'X'}\n"
                    "    self.assertEqual(board.count('X'), 2)\n    self.assertEqual(board.count('Z'), 0)\n",
                ),
            ),
        ),
        (
            "def test_grid_board(self):\n    board = GridBoard(2, 2)\n    for x, y in board.neighbors(0, 0):\n"
            "        board.place(x, y, 'X')\n    self.assertEqual(board.count('X'), 3)\n"
            "    self.assertIsNone(board.get(0, 0))\n    self.assertEqual(board.get(1, 1), 'X')\n",
        ),
    ),
    _Class(
        "Playlist",
        "An ordered list of songs, each a title and a length in seconds.",
        (),
        "def __init__(self):\n    self.songs = []\n",
        ("self.songs",),
        (
            _Method(
                'def add_song(self, title, seconds):\n    """\n    Append the song (title, seconds) to the playlist.\n'
                '    :return: int, the number of songs now in the playlist\n    """\n',
                "    self.songs.append((title, seconds))\n    return len(self.songs)\n",
                (
                    "def test_add_song_1(self):\n    playlist = Playlist()\n"
                    "    self.assertEqual(playlist.add_song('Intro', 61), 1)\n"
                    "    self.assertEqual(playlist.add_song('Outro', 5), 2)\n"
                    "    self.assertEqual(playlist.songs, [('Intro', 61), ('Outro', 5)])\n",
                ),
            ),
            _Method(
                'def remove_song(self, title):\n    """\n    Remove the first song with this title.\n'
                '    :return: bool, whether a song was removed\n    """\n',
                "    for index, (name, _) in enumerate(self.songs):\n        if name == title:\n"
                "            del self.songs[index]\n            return True\n    return False\n",
                (
                    "def test_remove_song_1(self):\n    playlist = Playlist()\n"
                    "    playlist.songs = [('A', 1), ('B', 2), ('A', 3)]\n    self.assertTrue(playlist.remove_song('A'))\n"
                    "    self.assertEqual(playlist.songs, [('B', 2), ('A', 3)])\n",
                    "def test_remove_song_2(self):\n    playlist = Playlist()\n    playlist.songs = [('A', 1)]\n"
                    "    self.assertFalse(playlist.remove_song('Z'))\n    self.assertEqual(playlist.songs, [('A', 1)])\n",
                ),
            ),
            _Method(
                'def total_time(self):\n    """\n    :return: str, the total length as "M:SS" (minutes may exceed 59)\n'
                '    """\n',
                "    total = sum(seconds for _, seconds in self.songs)\n    return f'{total // 60}:{total % 60:02d}'\n",
                (
                    "def test_total_time_1(self):\n    playlist = Playlist()\n"
                    "    playlist.songs = [('A', 61), ('B', 125)]\n    self.assertEqual(playlist.total_time(), '3:06')\n",
                    "def test_total_time_2(self):\n    self.assertEqual(Playlist().total_time(), '0:00')\n",
                    "def test_total_time_3(self):\n    playlist = Playlist()\n    playlist.songs = [('Long', 3600)]\n"
                    "    self.assertEqual(playlist.total_time(), '60:00')\n",
                ),
            ),
            _Method(
                'def longest_song(self):\n    """\n    :return: str or None, the title of the longest song, the first one '
                'on a tie;\n    None when the playlist is empty\n    """\n',
                "    if not self.songs:\n        return None\n"
                "    return max(self.songs, key=lambda song: song[1])[0]\n",
                (
                    "def test_longest_song_1(self):\n    playlist = Playlist()\n"
                    "    playlist.songs = [('A', 10), ('B', 30), ('C', 30)]\n"
                    "    self.assertEqual(playlist.longest_song(), 'B')\n",
                    "def test_longest_song_2(self):\n    self.assertIsNone(Playlist().longest_song())\n",
                ),
            ),
        ),
        (
            "def test_playlist(self):\n    playlist = Playlist()\n    playlist.add_song('One', 100)\n"
            "    playlist.add_song('Two', 200)\n    self.assertTrue(playlist.remove_song('One'))\n"
            "    self.assertEqual(playlist.total_time(), '3:20')\n    self.assertEqual(playlist.longest_song(), 'Two')\n",
        ),
    ),
)


def builtin_records() -> list[dict[str, Any]]:
    """The built-in classes as ClassEval records (fresh dicts), ids ``mrlm-class/0``, ..."""
    return [_record(index, spec) for index, spec in enumerate(CLASSES)]


@cache
def builtin_classes() -> tuple[ClassTask, ...]:
    """The built-in classes as tasks."""
    return tuple(
        class_task(record, f"built-in class {index}", source="builtin")
        for index, record in enumerate(builtin_records())
    )
