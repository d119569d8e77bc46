"""Math reasoning: a seeded task generator, answer extraction and exact checking, and the env."""

from mrlm.envs.math.answers import answers_match, extract_answer, parse_number
from mrlm.envs.math.env import MathEnv
from mrlm.envs.math.tasks import MathTask, generate_task

__all__ = ["MathEnv", "MathTask", "answers_match", "extract_answer", "generate_task", "parse_number"]
