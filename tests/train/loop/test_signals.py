"""Ctrl-C and SIGTERM during a checkpoint's save: held until it is written, then handled as before."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from mrlm.train.loop import checkpoint as ckpt
from mrlm.train.loop import latest_checkpoint, manifest
from mrlm.train.loop.signals import signals_held
from tests.train.loop.helpers import lm_step, session_for


@pytest.fixture
def default_sigint() -> Iterator[None]:
    # A suite started in the background (cmd &) gets SIGINT ignored; a terminal's foreground job has
    # Python's handler, which these tests need.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
def test_a_held_signal_reaches_the_previous_handler_once_the_block_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[int] = []
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        finished = []

        def held_block() -> None:
            with signals_held("writing the checkpoint of step 3"):
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C to stop faster: held too
                os.kill(os.getpid(), signal.SIGTERM)
                finished.append(True)  # the block ran to its end

        with pytest.raises(KeyboardInterrupt):  # Python's own SIGINT handler, after the block
            held_block()
        assert finished
        assert seen == []  # only the first signal held is delivered
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        err = capsys.readouterr().err
        assert err.count("received while") == 1
        assert "SIGINT received while writing the checkpoint of step 3: stopping once it is done" in err
        with signals_held("saving"):
            os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous_term)


@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_in_the_middle_of_a_save_leaves_that_checkpoint_whole(
    tmp_path: Path, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mrlm.train.tiny import build_tiny_model

    write_state = ckpt.write_state

    def interrupted(directory: Path, parts: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # lands while torch's checkpoint writer runs
        write_state(directory, parts)

    monkeypatch.setattr(ckpt, "write_state", interrupted)
    out = tmp_path / "run"

    def train_and_save() -> None:
        with session_for(build_tiny_model(tokenizer), out, run={"max_steps": 2}) as session:
            lm_step(session, torch.randint(3, 500, (2, 8)))
            session.save_checkpoint({"cursor": 1})

    with pytest.raises(KeyboardInterrupt):
        train_and_save()
    saved = latest_checkpoint(out)
    assert saved == out / "checkpoints" / "step-000001"
    manifest.verify(saved, 0, 1)  # every file written and sealed
    assert not [p for p in (out / "checkpoints").iterdir() if p.name.startswith(ckpt.TEMP_PREFIX)]
