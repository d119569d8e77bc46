"""Self-play on competitive envs: win rates, a rule-based opponent, pools of past snapshots.

See :mod:`mrlm.train.self_play.training` for how the multi-agent trainers use them.
"""

from mrlm.train.self_play.fixed_reply import DEBATE_SLOGAN, FixedReply
from mrlm.train.self_play.pool import SnapshotPool, load_snapshot, take_snapshot
from mrlm.train.self_play.win_rate import Record, eval_seeds, play_record, win_rate

__all__ = [
    "DEBATE_SLOGAN",
    "FixedReply",
    "Record",
    "SnapshotPool",
    "eval_seeds",
    "load_snapshot",
    "play_record",
    "take_snapshot",
    "win_rate",
]
