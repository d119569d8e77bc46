"""Run episodes of ``mrlm/ToolUse-v0`` with a scripted tool-using agent, and with a careless one.

The scripted agent (``ReferenceAgent``) calls the calculator, search, Python and files tools the way a
trained model should and reads its answers from their results; the careless agent sends a malformed
call and then guesses, so the two mean rewards show the signal a trainer would see. The first
episode's transcript is printed in full.

Run: ``uv run python examples/tool_use.py --episodes 10``
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium

import mrlm.envs  # noqa: F401  (registers the mrlm/ ids with Gymnasium)
from mrlm.envs.tools import ToolUseEnv
from mrlm.envs.tools.reference import ReferenceAgent

CARELESS_REPLIES = ('<tool_call>{"name": "calculator", "arguments": 42}</tool_call>', "<answer>7</answer>")


def run_episode(env: ToolUseEnv, seed: int, careless: bool = False) -> tuple[float, list[str]]:
    """One episode; returns the summed reward and the names of the tools called."""
    observation, _ = env.reset(seed=seed)
    assert env.task is not None
    agent = ReferenceAgent(env.task, env.registry.names)
    total, terminated, turn = 0.0, False, 0
    info: dict[str, Any] = {}
    while not terminated:
        reply = CARELESS_REPLIES[min(turn, 1)] if careless else agent.act(observation)
        observation, reward, terminated, _, info = env.step(reply)
        total, turn = total + reward, turn + 1
    return total, [str(call["name"]) for call in info["tool_calls"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = gymnasium.make("mrlm/ToolUse-v0", render_mode="ansi")
    tool_env = env.unwrapped
    assert isinstance(tool_env, ToolUseEnv)
    _, info = tool_env.reset(seed=args.seed)
    print(info["system_prompt"].split("Available tools:")[0])
    print(f"tools offered: {[tool['function']['name'] for tool in info['tools']]}\n")

    scripted = careless = 0.0
    for episode in range(args.episodes):
        reward, calls = run_episode(tool_env, args.seed + episode)
        assert tool_env.task is not None
        if episode == 0:
            print(tool_env.render())
        print(f"episode {episode}: {tool_env.task.kind:<15} calls {calls} -> reward {reward:.2f}")
        scripted += reward
        careless += run_episode(tool_env, args.seed + episode, careless=True)[0]
    env.close()
    print(
        f"mean reward: scripted agent {scripted / args.episodes:.3f}, careless {careless / args.episodes:.3f}"
    )


if __name__ == "__main__":
    main()
