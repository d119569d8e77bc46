"""Run ``mrlm/ClassCompletion-v0`` with scripted agents on the built-in class ``Inventory``.

First the env deals the methods; one agent forgets a method in round 1, sees the failing test, and
adds it in round 2 while its teammate's methods carry over. Then the agents split the work
themselves, taking turns: the second agent reads which methods the first one wrote and takes the
others. The classes run in the sandbox, never in this process.

Run: ``uv run python examples/class_completion_episode.py``
"""

from __future__ import annotations

import re
from typing import Any

import mrlm.envs

#: One scripted implementation of each method of ``Inventory``.
METHODS = {
    "add_item": (
        "def add_item(self, name, quantity):\n"
        "    self.stock[name] = self.stock.get(name, 0) + quantity\n    return self.stock[name]\n"
    ),
    "remove_item": (
        "def remove_item(self, name, quantity):\n    have = self.stock.get(name, 0)\n"
        "    if quantity > have:\n        return False\n    if quantity == have:\n        del self.stock[name]\n"
        "    else:\n        self.stock[name] = have - quantity\n    return True\n"
    ),
    "quantity": "def quantity(self, name):\n    return self.stock.get(name, 0)\n",
    "most_stocked": (
        "def most_stocked(self):\n    if not self.stock:\n        return None\n"
        "    return sorted(self.stock, key=lambda name: (-self.stock[name], name))[0]\n"
    ),
}
TASK = {"task_id": "mrlm-class/0"}


def reply(names: list[str]) -> str:
    return "My methods:\n```python\n" + "\n\n".join(METHODS[name] for name in names) + "```"


def _summary(info: dict[str, Any]) -> str:
    components = ", ".join(f"{name} {value:.2f}" for name, value in info["components"].items())
    return (
        f"{info['passed']}/{info['total']} tests, team score {info['team_score']:.2f} ({components}), "
        f"penalties {info['penalties']}"
    )


def dealt_methods() -> None:
    env = mrlm.envs.make("mrlm/ClassCompletion-v0", max_turns=2)
    _, infos = env.reset(seed=1, options=TASK)
    assigned = {agent: info["assigned"] for agent, info in infos.items()}
    print(f"the env deals: {assigned}")
    forgetful = assigned["agent_1"][:1]  # agent_1 sends one of its two methods only
    rounds = [
        {"agent_0": reply(assigned["agent_0"]), "agent_1": reply(forgetful)},
        {"agent_0": "", "agent_1": reply(assigned["agent_1"][1:])},  # what was placed stays
    ]
    for actions in rounds:
        observations, rewards, terminations, _, infos = env.step(actions)
        print(f"round {infos['agent_1']['turn']}: rewards {rewards}; {_summary(infos['agent_1'])}")
        print(f"agent_1 reads:\n{observations['agent_1']['text'][:1500]}\n")
        if all(terminations.values()):
            break
    env.close()


def claimed_methods() -> None:
    env = mrlm.envs.make("mrlm/ClassCompletion-v0", kind="aec", assignment="agents", max_turns=1)
    env.reset(seed=0, options=TASK)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        taken = re.findall(r"^- `agent_0`: (.*)$", observation["text"], flags=re.MULTILINE)
        free = [name for name in METHODS if f"`{name}`" not in "".join(taken)]
        mine = free[:2] if agent == "agent_0" else free
        print(f"{agent} sees {taken or 'no drafts'} and writes {mine}")
        env.step(reply(mine))
    print(f"claimed split, one round: total rewards {totals}; {_summary(info)}; owners {info['owners']}")
    env.close()


def main() -> None:
    dealt_methods()
    claimed_methods()


if __name__ == "__main__":
    main()
