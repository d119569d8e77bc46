"""Math reasoning: a seeded task generator, dataset records, answer extraction and checking, the env.

Importing this package does not import sympy or math-verify: plain answers are checked exactly in
process, and symbolic checks run in worker processes started on first need.
"""

from mrlm.envs.math.answers import Extraction, extract, extract_answer, last_boxed
from mrlm.envs.math.env import SYSTEM_PROMPT, MathEnv
from mrlm.envs.math.generator import TOPIC_GROUPS, TOPICS, generate_task, resolve_topics
from mrlm.envs.math.records import detect_format, load_records, record_task
from mrlm.envs.math.tasks import LEVELS, MathTask
from mrlm.envs.math.values import Interval, parse_interval, parse_number, parse_tuple
from mrlm.envs.math.verify import Verdict, answers_match, check_answer
from mrlm.envs.math.workers import VerifierPool

__all__ = [
    "LEVELS",
    "SYSTEM_PROMPT",
    "TOPICS",
    "TOPIC_GROUPS",
    "Extraction",
    "Interval",
    "MathEnv",
    "MathTask",
    "Verdict",
    "VerifierPool",
    "answers_match",
    "check_answer",
    "detect_format",
    "extract",
    "extract_answer",
    "generate_task",
    "last_boxed",
    "load_records",
    "parse_interval",
    "parse_number",
    "parse_tuple",
    "record_task",
    "resolve_topics",
]
