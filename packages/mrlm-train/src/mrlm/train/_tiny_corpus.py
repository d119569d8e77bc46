"""Built-in training text for the tiny tokenizer.

The corpus is small on purpose: it only has to give byte-level BPE enough frequent pairs to learn a
few hundred merges that make English, numbers, Python and chat markup shorter than raw bytes.
Losslessness never depends on it, because every byte is in the base alphabet.

``tiny_corpus()`` returns the same tuple of strings on every call, so the trained vocabulary is a
pure function of the corpus and the vocabulary size.
"""

from __future__ import annotations

_ENGLISH: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "A small model can still learn to follow simple instructions.",
    "Please answer the question with a single number.",
    "The agent reads the observation, thinks, and then takes an action.",
    "Each episode ends when the goal is reached or the time runs out.",
    "Two players take turns; the first one to complete a line wins.",
    "If the answer is correct, the reward is one. Otherwise it is zero.",
    "What is the capital of France? The capital of France is Paris.",
    "The weather today is sunny with a light breeze from the west.",
    "She opened the door, looked around the room, and sat down at the table.",
    "We train the policy with reinforcement learning from the environment's reward.",
    "Write a short story about a robot who learns to paint.",
    "The results are shown in the table below, sorted by score.",
    "Think step by step, and show your reasoning before the final answer.",
    "It is important to check the work before you submit it.",
    "They walked to the station together and caught the last train home.",
    "The function returns a list of numbers in increasing order.",
    "Good morning! How can I help you today?",
    "Thank you for the clear explanation; that makes sense now.",
    "I am not sure, but I think the answer is seven.",
    "Move the piece to the left, then to the top row.",
    "The guess was too high. Try a lower number next time.",
    "Your opponent played rock, so paper would have won this round.",
    "Let me search for that file and read its first lines.",
    "The test passed on the first try, which was a pleasant surprise.",
    "Numbers, letters and symbols all become bytes before they become tokens.",
    "Here is the plan: read the input, compute the result, and print it.",
    "When in doubt, keep it simple and make it correct first.",
)

_CHAT: tuple[str, ...] = (
    "system\nYou are a helpful assistant.",
    "user\nWhat is 2 + 3?",
    "assistant\nThe answer is 5.",
    "user\nCan you help me write a function?",
    "assistant\nSure. Here is a function that adds two numbers.",
    'tool\n{"result": 42}',
    "assistant\nThe tool returned 42, so the answer is 42.",
    "system\nYou are playing a game against another agent. Reply with one move.",
    "user\nYour move.",
    "assistant\nI choose the center square.",
    "user\nGuess a number between 1 and 100.",
    "assistant\nMy guess is 50.",
    "user\nToo low.",
    "assistant\nThen I guess 75.",
    "observation: the door is locked. action: use key. reward: 1.0. done: true",
    "role: user, content: hello. role: assistant, content: hi there!",
)

_CODE: tuple[str, ...] = (
    "def add(a: int, b: int) -> int:\n    return a + b\n",
    "def is_even(n: int) -> bool:\n    return n % 2 == 0\n",
    "for i in range(10):\n    print(i * i)\n",
    "import math\n\nprint(math.sqrt(16))\n",
    "class Counter:\n    def __init__(self) -> None:\n        self.count = 0\n\n"
    "    def step(self) -> None:\n        self.count += 1\n",
    "numbers = [3, 1, 4, 1, 5, 9, 2, 6]\nnumbers.sort()\nprint(numbers)\n",
    "if x > 0:\n    return 'positive'\nelif x < 0:\n    return 'negative'\nelse:\n    return 'zero'\n",
    "with open('data.txt') as f:\n    lines = f.read().splitlines()\n",
    'result = {"answer": 42, "correct": True, "reward": 1.0}\n',
    "def reward(answer: str, target: str) -> float:\n    return 1.0 if answer.strip() == target else 0.0\n",
    "while not done:\n    action = policy(observation)\n"
    "    observation, reward, terminated, truncated, info = env.step(action)\n"
    "    done = terminated or truncated\n",
    "total = sum(x for x in values if x is not None)\n",
    "assert add(2, 3) == 5, 'add is broken'\n",
)


def _arithmetic() -> tuple[str, ...]:
    """Small sums and products: they teach merges for digits, operators and '='."""
    lines: list[str] = []
    for a in range(0, 20):
        for b in range(0, 20, 3):
            lines.append(f"{a} + {b} = {a + b}")
            lines.append(f"{a} * {b} = {a * b}")
            if a >= b:
                lines.append(f"{a} - {b} = {a - b}")
    lines.extend(f"{n}" for n in range(100, 1000, 37))
    lines.extend(f"{x / 4:.2f}" for x in range(0, 40))
    return tuple(lines)


def tiny_corpus() -> tuple[str, ...]:
    """The built-in corpus: English sentences, chat turns, Python snippets and arithmetic."""
    return _ENGLISH + _CHAT + _CODE + _arithmetic()
