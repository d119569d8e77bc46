"""Loading the policy: a causal LM and its tokenizer, by Hub name, local path, or ``"tiny"``.

``load_policy(ModelConfig(name_or_path=...))`` returns ``(model, tokenizer)``:

* ``"tiny"`` builds the tiny local model of :mod:`mrlm.train.tiny` in memory (qwen2, hidden 64,
  seed 0), with nothing read from disk or the network: the quickstart and the tests use it. To load a
  saved tiny model (``mrlm-train tiny-model --output DIR``) give its directory; a local directory
  literally named ``tiny`` is ``./tiny``.
* a path that exists loads from disk; a name that looks like a path but does not exist raises
  :class:`FileNotFoundError` naming it (a typo never turns into a Hub download attempt), and a path
  that is a file, a directory without ``config.json``, or a directory whose model does not load (a
  config that is not JSON, no weights) raises :class:`ModelNotFoundError`;
* anything else is a Hub id (``org/name``); when it is neither cached nor reachable the error says
  so (:class:`ModelNotFoundError`).

The tokenizer always has a pad token (its eos when it had none, with a warning). Its padding side is
left as loaded: generation pads on its own terms (see :mod:`mrlm.train.generation`). A command that
plays conversations loads with ``chat=True``: a tokenizer without a chat template is then refused
(:class:`NoChatTemplateError`) before the weights load. ``lora_target_modules`` are checked against
the loaded model: a name that matches none of its modules is refused (:class:`LoraTargetError`).
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors import SafetensorError

from mrlm.train.config_io import ConfigError, check_values

TINY = "tiny"

Dtype = Literal["auto", "float32", "bfloat16", "float16"]

_TORCH_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


class ModelNotFoundError(OSError):
    """A model name that names no model: not a model directory here (or one whose model does not
    load), nor available from the Hugging Face Hub."""


class NoChatTemplateError(ValueError):
    """A model whose tokenizer has no chat template, loaded to play conversations (which it renders)."""


class LoraTargetError(ConfigError):
    """A ``lora_target_modules`` name that matches no module of the model (a typo, or another
    architecture's name). A setting that does not fit, hence a :class:`ConfigError`."""


# A directory holding one of these is a model (peft adapters have only the second).
_MODEL_CONFIGS = ("config.json", "adapter_config.json")


@dataclass
class ModelConfig:
    """Which model to train and how to load it."""

    name_or_path: str
    """Hub id (org/name), local directory, or "tiny" for the built-in tiny test model."""
    dtype: Dtype = "float32"
    """Weights dtype; "auto" keeps the dtype the checkpoint was saved in."""
    attn_implementation: str | None = None
    """Attention kernel ("eager", "sdpa", "flash_attention_2", ...); None lets transformers choose."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, about a third more compute."""
    lora_r: int = 0
    """LoRA rank; 0 trains all weights, > 0 trains LoRA adapters only (needs peft)."""
    lora_alpha: int = 32
    """LoRA scaling numerator: adapters are scaled by lora_alpha / lora_r."""
    lora_dropout: float = 0.0
    """Dropout on the LoRA adapters' input."""
    lora_target_modules: tuple[str, ...] | None = None
    """Module names to adapt (e.g. q_proj v_proj); None adapts every linear layer but the output head.
    Each must match a module of the model (checked when it loads, also with lora_r 0: policies="lora"
    adapts them then)."""

    def __post_init__(self) -> None:
        check_values(self)  # built in Python, it was checked by neither the CLI nor a config file
        if self.dtype not in ("auto", *_TORCH_DTYPES):
            raise ValueError(f"dtype must be 'auto', 'float32', 'bfloat16' or 'float16', got {self.dtype!r}")
        if self.lora_r < 0:
            raise ValueError(f"lora_r must be >= 0 (0 = no LoRA), got {self.lora_r}")
        if self.lora_alpha < 1:  # 0 leaves the adapters without effect, a negative value flips them
            raise ValueError(f"lora_alpha must be at least 1, got {self.lora_alpha}")
        if not 0 <= self.lora_dropout < 1:  # nan fails this too
            raise ValueError(f"lora_dropout must be in [0, 1), got {self.lora_dropout}")


def load_policy(config: ModelConfig, *, chat: bool = False, seed: int | None = None) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` as described in the module docstring.

    The model comes back in eval mode (as ``from_pretrained`` returns it), on CPU, with gradient
    checkpointing and LoRA applied as configured. Typed ``Any``: the model may be a peft wrapper.
    ``chat``: the model will play conversations, so its tokenizer must have a chat template.
    ``seed``: with ``lora_r > 0``, the adapters' initial weights are drawn from it, the same in every
    run with that seed, and the global random state is left as it was; None draws them from the
    global torch generator.

    Raises:
        FileNotFoundError: a local-looking path that does not exist.
        ModelNotFoundError: a local path that is not a model directory or whose model does not
            load, or a Hub id that is not cached and cannot be downloaded.
        NoChatTemplateError: ``chat`` with a tokenizer that has no chat template (found before the
            weights load).
        ImportError: ``lora_r > 0`` without peft installed.
        LoraTargetError: a ``lora_target_modules`` name that matches no module of the model.
    """
    if config.name_or_path == TINY:
        model, tokenizer = _build_tiny(config)
    else:
        source = resolve_model_source(config.name_or_path)
        tokenizer = _from_pretrained_tokenizer(source)
        if chat:
            check_chat_template(tokenizer, source)
        model = _from_pretrained_model(source, config)
    _ensure_pad_token(tokenizer)
    if config.lora_target_modules is not None:
        check_lora_targets(model, config.lora_target_modules)
    if config.gradient_checkpointing:
        _enable_checkpointing(model)
    if config.lora_r > 0:
        model = _apply_lora(model, config, seed)
    return model, tokenizer


#: The file in a saved model's directory that says how its conversations open.
OPENING_FILE = "mrlm_opening.json"


def mark_unnamed_opening(directory: str | Path) -> None:
    """Record in ``directory`` (a saved model) that it was trained on conversations that open
    without the line naming the agent (each agent's own model), so that later plays open them the
    same way (see :mod:`mrlm.train.rollout.prompts`)."""
    Path(directory, OPENING_FILE).write_text(json.dumps({"names_agent": False}) + "\n", encoding="utf-8")


def names_agent(name_or_path: str) -> bool:
    """Whether conversations played by the model ``name_or_path`` open with the line naming the
    agent: False where its directory records so (:func:`mark_unnamed_opening`), True otherwise (no
    record, a Hub id, ``tiny``). A record that does not read as one is warned about and ignored."""
    path = Path(name_or_path).expanduser() / OPENING_FILE
    if not path.is_file():
        return True
    try:
        value = json.loads(path.read_text(encoding="utf-8"))["names_agent"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        value = error
    if not isinstance(value, bool):
        warnings.warn(f"{path} does not say whether to name the agent ({value!r}): it is named", stacklevel=2)
        return True
    return value


def check_agent_models(agent_models: Mapping[str, object]) -> None:
    """Raise ValueError naming the first agent of ``agent_models`` whose model is not a non-empty
    name or path (an empty one would resolve to the current directory)."""
    for agent, model in agent_models.items():
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"agent_models gives agent {agent!r} an empty model name or path ({model!r})")


def looks_local(name: str) -> bool:
    """True when ``name`` can only be a filesystem path, never a Hub id.

    Hub ids are ``name`` or ``org/name``. A name is local when it is absolute, starts with ``.`` or
    ``~``, has more than two parts, or its parent directory exists here.
    """
    if name.startswith((".", "~", os.sep)) or os.path.isabs(name):
        return True
    path = Path(name)
    return len(path.parts) > 2 or (len(path.parts) == 2 and path.parent.is_dir())


def resolve_model_source(name: str) -> str:
    """The local directory for ``name`` if there is one, else ``name`` as a Hub id.

    Raises:
        FileNotFoundError: ``name`` can only be a path, and nothing is there.
        ModelNotFoundError: a path that is a file, or a directory without a model config.
    """
    path = Path(name).expanduser()
    if path.exists():
        _check_model_dir(path)
        return str(path)
    if looks_local(name):
        raise FileNotFoundError(f"model path {name!r} does not exist (resolved to {path.resolve()})")
    return name


def _check_model_dir(path: Path) -> None:
    """Refuse a local path that cannot be a ``save_pretrained`` directory, before transformers
    reads it (a file is parsed as a JSON config; an empty directory fails on the tokenizer)."""
    if not path.is_dir():
        raise ModelNotFoundError(
            f"model path {str(path)!r} is a file; give the directory save_pretrained wrote (with config.json)"
        )
    if not any((path / name).is_file() for name in _MODEL_CONFIGS):
        content = "is empty" if not any(path.iterdir()) else "has no config.json"
        raise ModelNotFoundError(
            f"model directory {str(path)!r} {content}; give the directory save_pretrained wrote "
            "(with config.json)"
        )


def check_chat_template(tokenizer: Any, source: str) -> None:
    """Raise :class:`NoChatTemplateError` naming ``source`` when ``tokenizer`` has no chat template.

    Every turn of an episode is rendered with it; without one the first rollout would fail, after
    the weights have loaded. No template is assumed in its place: a base model knows none.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise NoChatTemplateError(
            f"the tokenizer of model {source!r} has no chat template, which rendering conversations "
            "needs: give a chat (instruct) model, or add a template to the model directory "
            "(chat_template.jinja, as tokenizer.save_pretrained writes one)"
        )


#: Files one of which a model directory's tokenizer is read from (transformers' fast and slow
#: tokenizers); without any, transformers builds an empty tokenizer from the model's config alone.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "vocab.txt")


def _from_pretrained_tokenizer(source: str) -> Any:
    from transformers import AutoTokenizer

    path = Path(source)
    if path.is_dir() and not any((path / name).is_file() for name in _TOKENIZER_FILES):
        raise ModelNotFoundError(
            f"model directory {source!r} has no tokenizer ({', '.join(_TOKENIZER_FILES)}): save the "
            "tokenizer beside the model (tokenizer.save_pretrained) or give the directory that holds both"
        )
    try:
        return AutoTokenizer.from_pretrained(source)
    except OSError as err:
        raise model_not_found(source, err) from err
    except ValueError as err:
        # Files that name no tokenizer transformers can build ({} as config.json, say).
        if not Path(source).exists():
            raise
        raise model_not_found(source, err) from err


def _from_pretrained_model(source: str, config: ModelConfig) -> Any:
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": "auto" if config.dtype == "auto" else _TORCH_DTYPES[config.dtype]}
    if config.attn_implementation is not None:
        kwargs["attn_implementation"] = config.attn_implementation
    try:
        return AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, SafetensorError) as err:  # missing, or cut short (an interrupted copy or save)
        raise model_not_found(source, err) from err


def model_not_found(source: str, err: Exception) -> ModelNotFoundError:
    """The error for ``source`` whose loading raised ``err``: a local directory that holds no
    model that loads (broken or missing files: ``err``, transformers' message, says which), or a
    name found neither here nor on the Hub."""
    if Path(source).exists():
        return ModelNotFoundError(
            f"model directory {source!r} holds no model that loads: {type(err).__name__}: {err}"
        )
    from huggingface_hub import constants

    hint = " (offline mode is on, so the Hub was not asked)" if constants.is_offline_mode() else ""
    return ModelNotFoundError(
        f"could not find model {source!r} locally (no such directory) or on the Hugging Face Hub{hint}: "
        f"check the name, log in for gated models, or download it first. Cause: {err}"
    )


def _build_tiny(config: ModelConfig) -> tuple[Any, Any]:
    from mrlm.train.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    model: Any = build_tiny_model(tokenizer)
    if config.dtype in ("bfloat16", "float16"):
        model = model.to(_TORCH_DTYPES[config.dtype])
    if config.attn_implementation is not None:
        model.set_attn_implementation(config.attn_implementation)
    return model, tokenizer


def _enable_checkpointing(model: Any) -> None:
    # Non-reentrant checkpointing works with frozen inputs, so LoRA needs no input-grad hook.
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # newer transformers; the old name warns there
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _ensure_pad_token(tokenizer: Any) -> None:
    if tokenizer.pad_token is not None:
        return
    if tokenizer.eos_token is None:
        raise ValueError("the tokenizer has neither a pad token nor an eos token; set one before training")
    warnings.warn(
        f"the tokenizer has no pad token; using its eos token {tokenizer.eos_token!r} for padding",
        stacklevel=3,
    )
    tokenizer.pad_token = tokenizer.eos_token


def _apply_lora(model: Any, config: ModelConfig, seed: int | None) -> Any:
    peft = import_peft(f"lora_r={config.lora_r}", "or set lora_r=0")
    lora = lora_config(config)
    if seed is None:
        return peft.get_peft_model(model, lora)
    with torch.random.fork_rng(devices=[]):  # the model is on CPU: its init draws from the CPU generator
        torch.manual_seed(seed)
        return peft.get_peft_model(model, lora)


def check_lora_targets(model: Any, targets: Sequence[str]) -> None:
    """Raise :class:`LoraTargetError` unless each of ``targets`` matches a module of ``model`` as peft
    matches them (the module's full name, or its last dotted parts); the message lists the model's
    linear layers and the closest one to each name that matches nothing."""
    names = [name for name, _ in model.named_modules() if name]
    missing = [target for target in targets if not any(_matches(name, target) for name in names)]
    if not missing:
        return
    linear = sorted(
        {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if name and _is_linear(module)}
    )
    refused = []
    for target in missing:
        close = difflib.get_close_matches(target, linear, n=1)
        refused.append(f"{target!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise LoraTargetError(
        f"lora_target_modules {', '.join(refused)} {'matches' if len(refused) == 1 else 'match'} "
        f"no module of the model; its linear layers are {', '.join(linear)}"
    )


def _matches(name: str, target: str) -> bool:
    return name == target or name.endswith(f".{target}")


def _is_linear(module: torch.nn.Module) -> bool:
    # GPT-2 style models use transformers' Conv1D, a linear layer with transposed weights.
    return isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D"


def import_peft(needed_by: str, alternative: str) -> Any:
    """The peft module; an ImportError saying how to install it when it is missing.

    ``needed_by`` names the setting that needs it and ``alternative`` what to do instead, as in
    "lora_r=8 needs the peft package: pip install peft (or set lora_r=0)".
    """
    try:
        return importlib.import_module("peft")
    except ImportError as err:
        raise ImportError(f"{needed_by} needs the peft package: pip install peft ({alternative})") from err


def lora_config(config: ModelConfig, rank: int | None = None) -> Any:
    """The peft ``LoraConfig`` of ``config``'s LoRA fields, with rank ``rank`` (default ``lora_r``)."""
    peft = import_peft(f"lora_r={config.lora_r}", "or set lora_r=0")
    targets: list[str] | str = (
        list(config.lora_target_modules) if config.lora_target_modules is not None else "all-linear"
    )
    return peft.LoraConfig(
        r=config.lora_r if rank is None else rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
