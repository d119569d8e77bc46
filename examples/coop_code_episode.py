"""Run ``mrlm/CoopCode-v0`` with scripted agents: two agents debug their program over two attempts,
then three agents take turns on a three-part problem.

The programs run in the sandbox, never in this process. In the first episode the main function has
an off-by-one bug; after reading the failing test it is fixed. In the second, each agent in turn
sees what its teammates wrote earlier in the round.

Run: ``uv run python examples/coop_code_episode.py``
"""

from __future__ import annotations

import json
from typing import Any

import mrlm.envs

DIGIT_SUM = """```python
def digit_sum(n: int) -> int:
    return sum(int(digit) for digit in str(n))
```"""

#: Stops one step early: 10 stays 10.
ROOT_BUGGY = """```python
def digital_root(n: int) -> int:
    while n > 10:
        n = digit_sum(n)
    return n
```"""

ROOT_FIXED = """The loop must also reduce 10, so the condition is n >= 10:
```python
def digital_root(n: int) -> int:
    while n >= 10:
        n = digit_sum(n)
    return n
```"""

#: The three parts of ``most_vowels`` (built-in problem ``mrlm-coop/11``), one per agent.
VOWEL_TEAM = {
    "helper_1": 'def is_vowel(char):\n    return len(char) == 1 and char.lower() in "aeiou"\n',
    "helper_2": "def vowel_count(word):\n    return sum(1 for char in word if is_vowel(char))\n",
    "main": (
        "def most_vowels(words):\n    best, best_count = '', -1\n    for word in words:\n"
        "        count = vowel_count(word)\n        if count > best_count:\n"
        "            best, best_count = word, count\n    return best\n"
    ),
}


def _summary(info: dict[str, Any]) -> str:
    components = ", ".join(f"{name} {value:.2f}" for name, value in info["components"].items())
    return f"{info['passed']}/{info['total']} tests, score {info['score']:.3f} ({components}), usages {json.dumps(info['usages'])}"


def debug_together() -> None:
    env = mrlm.envs.make("mrlm/CoopCode-v0", max_turns=2)
    observations, _ = env.reset(options={"task_id": "mrlm-coop/1"})
    print(f"== what main reads first ==\n{observations['main']['text']}\n")
    for main_reply in (ROOT_BUGGY, ROOT_FIXED):
        observations, rewards, terminations, _, infos = env.step({"helper": DIGIT_SUM, "main": main_reply})
        print(f"attempt {infos['main']['turn']}: rewards {rewards}; {_summary(infos['main'])}")
        print(f"main reads:\n{observations['main']['text']}\n")
        if all(terminations.values()):
            break
    env.close()


def take_turns() -> None:
    env = mrlm.envs.make("mrlm/CoopCode-v0", kind="aec", num_agents=3, max_turns=1)
    env.reset(options={"task_id": "mrlm-coop/11"})
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        if agent == "main":
            seen = observation["text"].split("Your teammates have already written this round:")[-1]
            print(f"== main sees its teammates' drafts ==\n{seen.strip()}\n")
        env.step(f"```python\n{VOWEL_TEAM[agent]}```")
    print(f"three agents, one round: total rewards {totals}; {_summary(info)}")
    env.close()


def main() -> None:
    debug_together()
    take_turns()


if __name__ == "__main__":
    main()
