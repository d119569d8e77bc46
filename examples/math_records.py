"""Serve GSM8K- and MATH-format records with ``mrlm/Math-v0`` and see how replies are judged.

The script writes a few records into a JSONL file in a temporary directory (nothing is downloaded),
builds the env on that file, and plays one episode per record with a canned reply. ``reset(seed=i)``
serves record ``i`` (seeds wrap around the collection), so seeds ``0 .. n-1`` visit every record once.
The replies show the answer forms that count as equal: ``1,000`` and ``1000``, ``\\frac12`` and ``0.5``,
``(x+1)^2`` and ``x^2+2x+1`` (a symbolic check, run by math-verify in a worker process), ``x > 3`` and
``(3, \\infty)``. A last episode shows multi-turn feedback, which never reveals the answer.

A Hugging Face dataset works the same way: ``gymnasium.make("mrlm/Math-v0", records=ds["test"])``.

Run: ``uv run python examples/math_records.py``
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import gymnasium

import mrlm.envs  # noqa: F401  (registers the mrlm/ ids with Gymnasium)

RECORDS = [
    {
        "question": "A school orders 40 boxes of 25 pencils. How many pencils is that?",
        "answer": "40 * 25 = <<40*25=1000>>1000 pencils.\n#### 1000",
    },
    {
        "question": "Tom reads 12 pages a day. How many pages does he read in a week?",
        "answer": "12 * 7 = <<12*7=84>>84\n#### 84",
    },
    {
        "problem": "Compute $\\frac{3}{4} - \\frac{1}{4}$.",
        "solution": "$\\frac{3}{4} - \\frac{1}{4} = \\frac{2}{4} = \\boxed{\\frac{1}{2}}$.",
        "level": "Level 1",
        "type": "Prealgebra",
    },
    {
        "problem": "Expand $(x+1)^2$.",
        "solution": "$(x+1)^2 = (x+1)(x+1) = \\boxed{x^2+2x+1}$.",
        "level": "Level 2",
        "type": "Algebra",
    },
    {
        "problem": "Solve $2x - 1 > 5$. Write the answer in interval notation.",
        "solution": "$2x > 6$, so $x > 3$: $\\boxed{(3, \\infty)}$.",
        "level": "Level 2",
        "type": "Algebra",
    },
]

#: One canned reply per record: right answers written another way, and one wrong answer.
REPLIES = [
    "40 boxes of 25 is 1,000 pencils.\n#### 1,000",
    "A week has 7 days, so 12 * 7 = 74. The answer is 74.",
    "Three quarters minus one quarter is a half: $\\boxed{0.5}$",
    "Squaring the binomial gives \\boxed{(x+1)^2}, which is already expanded enough.",
    "Dividing by 2 keeps the direction: \\boxed{x > 3}",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "records.jsonl"
        path.write_text("\n".join(json.dumps(record) for record in RECORDS) + "\n", encoding="utf-8")

        env = gymnasium.make("mrlm/Math-v0", records=str(path), format_reward=0.1)
        total = 0.0
        for seed, reply in enumerate(REPLIES):
            _, info = env.reset(seed=seed)
            _, reward, _, _, step_info = env.step(reply)
            total += float(reward)
            print(
                f"record {info['index']} ({info['source']}, {info['topic']}) | answer {step_info['extracted_answer']!r:12}"
                f" | {step_info['verify_method']:11} | correct {step_info['correct']!s:5} | reward {reward:.2f}"
            )
        print(f"mean reward over {len(REPLIES)} records: {total / len(REPLIES):.3f}")

        # Multi-turn: a wrong answer gets feedback (without the answer) and another try.
        env = gymnasium.make("mrlm/Math-v0", records=str(path), max_turns=2)
        env.reset(options={"index": 1})
        for reply in ("\\boxed{74}", "12 * 7 = 84, so \\boxed{84}"):
            feedback, reward, terminated, _, _ = env.step(reply)
            print(f"reply {reply!r} -> {feedback!r} (reward {reward}, terminated {terminated})")


if __name__ == "__main__":
    main()
