"""Supervised fine-tuning data and loss: examples with loss masks, batching, packing, cross-entropy.

:func:`load_sft_examples` turns chats, prompt/completion pairs and recorded trajectories into
:class:`SFTExample` records whose ``labels_mask`` marks the target tokens: the model's replies, the
environment's turns (a world model), or both. :func:`collate_padded` and :func:`collate_packed`
batch them; :func:`sft_loss` scores a batch.
"""

from mrlm.train.sft.batch import SFTBatch, collate_padded
from mrlm.train.sft.chat import MaskMethod, chat_example, has_generation_markers
from mrlm.train.sft.data import SFTDataError, SFTDataReport, load_sft_examples
from mrlm.train.sft.example import SFTExample, Target
from mrlm.train.sft.filtering import select_by_reward
from mrlm.train.sft.formats import detect_format
from mrlm.train.sft.loss import SFTLossStats, sft_loss
from mrlm.train.sft.packing import PackedAttention, block_causal_mask, collate_packed, pack_examples
from mrlm.train.sft.sources import iter_records
from mrlm.train.sft.trajectories import TrajectoryRecord, trajectory_example, trajectory_record

__all__ = [
    "MaskMethod",
    "PackedAttention",
    "SFTBatch",
    "SFTDataError",
    "SFTDataReport",
    "SFTExample",
    "SFTLossStats",
    "Target",
    "TrajectoryRecord",
    "block_causal_mask",
    "chat_example",
    "collate_packed",
    "collate_padded",
    "detect_format",
    "has_generation_markers",
    "iter_records",
    "load_sft_examples",
    "pack_examples",
    "select_by_reward",
    "sft_loss",
    "trajectory_example",
    "trajectory_record",
]
