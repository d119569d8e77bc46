"""Run ``mrlm/Code-v0`` with a scripted agent: a built-in problem debugged over two turns, then tasks
loaded from a JSONL file of HumanEval- and MBPP-format records.

The replies run in the sandbox, never in this process. The agent is scripted: its first reply has a
bug, and it fixes the bug after reading the env's feedback.

Run: ``uv run python examples/code_env.py``
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import gymnasium

import mrlm.envs  # noqa: F401  (registers the mrlm/ ids with Gymnasium)

BUGGY = """```python
def balanced_brackets(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    return depth == 0
```"""

FIXED = """The brackets must also match in kind and order, so I keep a stack:
```python
def balanced_brackets(text: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack
```"""

RECORDS = [
    {
        "task_id": "Example/0",
        "prompt": 'def middle(values: list) -> object:\n    """The middle item of a list of odd length."""\n',
        "canonical_solution": "    return values[len(values) // 2]\n",
        "test": "def check(candidate):\n    assert candidate([1]) == 1\n    assert candidate([1, 2, 3]) == 2\n",
        "entry_point": "middle",
    },
    {
        "task_id": 1,
        "text": "Write a function that tells whether a number is a perfect square.",
        "code": "def is_square(n):\n    return n >= 0 and int(n ** 0.5) ** 2 == n",
        "test_list": ["assert is_square(16)", "assert not is_square(15)", "assert is_square(0)"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
]


def debug_a_builtin_problem() -> None:
    env = gymnasium.make("mrlm/Code-v0", max_turns=2, all_pass_bonus=0.5)
    task_id = env.unwrapped.tasks[7].task_id  # type: ignore[attr-defined]
    observation, info = env.reset(options={"task_id": task_id})
    print(f"task {info['task_id']} ({info['num_tests']} hidden tests):\n{observation}\n")
    for reply in (BUGGY, FIXED):
        observation, reward, terminated, truncated, info = env.step(reply)
        print(
            f"reply -> outcome {info['outcome']}, {info['passed']}/{info['total']} tests, reward {reward:+.2f}"
        )
        print(f"feedback:\n{observation}\n")
        if terminated or truncated:
            break
    env.close()


def run_records_from_jsonl() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tasks.jsonl"
        path.write_text("".join(json.dumps(record) + "\n" for record in RECORDS), encoding="utf-8")
        env = gymnasium.make("mrlm/Code-v0", records=str(path))
        for index in range(len(RECORDS)):
            _, info = env.reset(options={"index": index})
            task = env.unwrapped.task  # type: ignore[attr-defined]
            _, reward, _, _, step_info = env.step(f"```python\n{task.canonical_solution}\n```")
            print(
                f"{info['task_id']} ({task.source}): reference solution -> {step_info['outcome']}, reward {reward}"
            )
        env.close()


def main() -> None:
    debug_a_builtin_problem()
    run_records_from_jsonl()


if __name__ == "__main__":
    main()
