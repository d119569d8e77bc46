"""Word problems from templates: shopping, travel (rate and distance), sharing, ages, discounts.

A template draws names, items and numbers, writes the story, and computes the answer exactly. The level
sets the size of the numbers and the number of steps (one multiplication at level 1; change from a bill
over three items, a whole trip's average speed or a reversed discount at level 5). Numbers are drawn so
that answers come out whole, or in whole cents for money.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from mrlm.envs.math.tasks import MathTask, distinct, integer, pick
from mrlm.envs.math.values import format_decimal

NAMES = (
    "Ava", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hiro",
    "Isla", "Jamal", "Kira", "Liam", "Maya", "Noah", "Olivia", "Priya",
)  # fmt: skip
GOODS = ("notebooks", "pens", "apples", "sandwiches", "tickets", "books", "candles", "mugs")
COUNTABLES = ("marbles", "stickers", "cookies", "cards", "coins", "shells")
PRODUCTS = ("jacket", "lamp", "backpack", "bicycle", "chair", "watch")
VEHICLES = ("car", "train", "bus", "cyclist", "boat")

_Story = tuple[str, Fraction]


def word_problem_task(rng: np.random.Generator, level: int) -> MathTask:
    """A story problem from one of :data:`TEMPLATES`, drawn uniformly; the answer is a number."""
    name = pick(rng, tuple(TEMPLATES))
    question, answer = TEMPLATES[name](rng, level)
    return MathTask(question, format_decimal(answer), "word_problem", level, subtopic=name)


def money(value: Fraction) -> str:
    """``12``, ``2.50``: whole dollars bare, otherwise with cents."""
    if value.denominator == 1:
        return str(value.numerator)
    cents = int(value * 100)
    return f"{cents // 100}.{cents % 100:02d}"


def _price(rng: np.random.Generator, low: int, high: int, step_cents: int) -> Fraction:
    """A price in ``[low, high]`` dollars, in steps of ``step_cents``."""
    steps = integer(rng, low * 100 // step_cents, high * 100 // step_cents)
    return Fraction(steps * step_cents, 100)


def shopping(rng: np.random.Generator, level: int) -> _Story:
    buyer = pick(rng, NAMES)
    if level <= 2:
        (goods,) = distinct(rng, GOODS, 1)
        quantity = integer(rng, 2, 9 if level == 1 else 12)
        price = Fraction(integer(rng, 1, 9)) if level == 1 else _price(rng, 1, 9, 25)
        question = (
            f"{buyer} buys {quantity} {goods} that cost ${money(price)} each. "
            f"How much does {buyer} spend in total, in dollars?"
        )
        return question, quantity * price
    kinds = 2 if level < 5 else 3
    step = {3: 100, 4: 25, 5: 5}[level]
    lines = [(integer(rng, 2, 6), goods, _price(rng, 1, 12, step)) for goods in distinct(rng, GOODS, kinds)]
    total = sum((quantity * price for quantity, _, price in lines), Fraction(0))
    bill = next(b for b in (10, 20, 50, 100, 200, 500) if b > total)
    parts = [f"{quantity} {goods} at ${money(price)} each" for quantity, goods, price in lines]
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}"
    question = (
        f"{buyer} buys {listed}, and pays with a ${bill} bill. How much change does {buyer} get, in dollars?"
    )
    return question, bill - total


def travel(rng: np.random.Generator, level: int) -> _Story:
    vehicle = pick(rng, VEHICLES)
    if level == 1:
        speed, hours = 5 * integer(rng, 2, 18), integer(rng, 2, 6)
        return (
            f"A {vehicle} travels at {speed} km/h for {hours} hours. How many kilometers does it travel?",
            Fraction(speed * hours),
        )
    if level == 2:
        speed, hours = 5 * integer(rng, 2, 18), integer(rng, 2, 8)
        return (
            f"A {vehicle} travels {speed * hours} km in {hours} hours. What is its average speed, in km/h?",
            Fraction(speed),
        )
    if level == 3:
        speed, half_hours = 10 * integer(rng, 2, 12), integer(rng, 3, 15)
        distance = speed * half_hours // 2
        return (
            f"A {vehicle} travels {distance} km at {speed} km/h. How many hours does the trip take?",
            Fraction(half_hours, 2),
        )
    # Two legs: pick speeds and times, and redraw until the average speed is a whole or half number.
    while True:
        speeds = (5 * integer(rng, 4, 20), 5 * integer(rng, 4, 20))
        times = (Fraction(integer(rng, 1, 4)), Fraction(integer(rng, 1, 4)))
        if level == 5:
            times = (times[0] + Fraction(1, 2), times[1])
        legs = [speed * time for speed, time in zip(speeds, times, strict=True)]
        average = sum(legs, Fraction(0)) / sum(times, Fraction(0))
        if (2 * average).denominator == 1 and all(leg.denominator == 1 for leg in legs):
            break
    question = (
        f"A {vehicle} travels {legs[0]} km at {speeds[0]} km/h and then {legs[1]} km at {speeds[1]} km/h. "
        "What is its average speed for the whole trip, in km/h?"
    )
    return question, average


def sharing(rng: np.random.Generator, level: int) -> _Story:
    things = pick(rng, COUNTABLES)
    if level <= 2:
        owner = pick(rng, NAMES)
        friends, each = integer(rng, 2, 6 if level == 1 else 12), integer(rng, 2, 12 if level == 1 else 25)
        if level == 1:
            question = (
                f"{owner} has {friends * each} {things} and shares them equally among {friends} friends. "
                f"How many {things} does each friend get?"
            )
            return question, Fraction(each)
        kept = integer(rng, 1, 20)
        question = (
            f"{owner} has {friends * each + kept} {things}, keeps {kept} and shares the rest equally among "
            f"{friends} friends. How many {things} does each friend get?"
        )
        return question, Fraction(each)
    people = distinct(rng, NAMES, 2 if level < 5 else 3)
    parts = [integer(rng, 1, 5 if level == 3 else 9) for _ in people]
    unit = integer(rng, 2, 10 if level == 3 else 25)
    total = sum(parts) * unit
    names = " and ".join(people) if len(people) == 2 else f"{people[0]}, {people[1]} and {people[2]}"
    question = (
        f"{names} share {total} {things} in the ratio {':'.join(map(str, parts))}. "
        f"How many {things} does {people[-1]} get?"
    )
    return question, Fraction(parts[-1] * unit)


def ages(rng: np.random.Generator, level: int) -> _Story:
    older, younger = distinct(rng, NAMES, 2)
    if level == 1:
        gap, age, years = integer(rng, 2, 30), integer(rng, 3, 40), integer(rng, 2, 15)
        question = (
            f"{older} is {gap} years older than {younger}. {younger} is {age} years old. "
            f"How old will {older} be in {years} years?"
        )
        return question, Fraction(age + gap + years)
    if level == 2:
        times, age = integer(rng, 2, 5), integer(rng, 4, 15)
        years = integer(rng, 1, times * age - 1)
        question = (
            f"{older} is {times} times as old as {younger}. {younger} is {age} years old. "
            f"How old was {older} {years} years ago?"
        )
        return question, Fraction(times * age - years)
    if level <= 4:
        times, age, years = integer(rng, 2, 6), integer(rng, 2, 20), integer(rng, 1, 12)
        total = times * age + age + 2 * years
        question = (
            f"{older} is {times} times as old as {younger}. In {years} years, the sum of their ages will be "
            f"{total}. How old is {younger} now?"
        )
        return question, Fraction(age)
    later_times = integer(rng, 2, 4)
    times = later_times + integer(rng, 1, 3)
    unit = integer(rng, 2, 6)
    age = (later_times - 1) * unit  # then the years below come out whole
    years = unit * (times - later_times)
    question = (
        f"{older} is {times} times as old as {younger}. In {years} years, {older} will be {later_times} "
        f"times as old as {younger}. How old is {older} now?"
    )
    return question, Fraction(times * age)


def discount(rng: np.random.Generator, level: int) -> _Story:
    product = pick(rng, PRODUCTS)
    if level <= 2:
        price = Fraction(4 * integer(rng, 1, 20 if level == 1 else 50))
        rate = pick(rng, (10, 20, 25, 50) if level == 1 else (5, 10, 15, 20, 25, 30, 40, 60, 75))
        question = (
            f"A {product} costs ${money(price)}. It is on sale for {rate}% off. "
            "What is the sale price, in dollars?"
        )
        return question, price * (100 - rate) / 100
    if level == 5:
        price = Fraction(20 * integer(rng, 1, 30))
        rate = pick(rng, (10, 20, 25, 40, 50))
        sale = price * (100 - rate) / 100
        question = (
            f"After a {rate}% discount, a {product} costs ${money(sale)}. "
            "What was its original price, in dollars?"
        )
        return question, price
    # Two percentage changes; redraw until the result is in whole cents.
    while True:
        price = Fraction(10 * integer(rng, 2, 40))
        first = pick(rng, (10, 20, 25, 30, 40, 50))
        second = pick(rng, (5, 8, 10)) if level == 3 else pick(rng, (10, 20, 25))
        sale = price * (100 - first) / 100
        final = sale * (100 + second) / 100 if level == 3 else sale * (100 - second) / 100
        if (final * 100).denominator == 1:
            break
    if level == 3:
        story = f"It is on sale for {first}% off, and then a {second}% sales tax is added to the sale price."
    else:
        story = (
            f"Its price is first reduced by {first}%, and then the new price is reduced by another {second}%."
        )
    question = f"A {product} costs ${money(price)}. {story} What is the final price, in dollars?"
    return question, final


TEMPLATES: dict[str, Callable[[np.random.Generator, int], _Story]] = {
    "shopping": shopping,
    "travel": travel,
    "sharing": sharing,
    "ages": ages,
    "discount": discount,
}
