from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnvKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENV_KIND_UNSPECIFIED: _ClassVar[EnvKind]
    ENV_KIND_GYMNASIUM: _ClassVar[EnvKind]
    ENV_KIND_AEC: _ClassVar[EnvKind]
    ENV_KIND_PARALLEL: _ClassVar[EnvKind]
ENV_KIND_UNSPECIFIED: EnvKind
ENV_KIND_GYMNASIUM: EnvKind
ENV_KIND_AEC: EnvKind
ENV_KIND_PARALLEL: EnvKind

class Value(_message.Message):
    __slots__ = ("text", "json")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    text: str
    json: str
    def __init__(self, text: _Optional[str] = ..., json: _Optional[str] = ...) -> None: ...

class Space(_message.Message):
    __slots__ = ("text", "discrete", "box", "dict")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DISCRETE_FIELD_NUMBER: _ClassVar[int]
    BOX_FIELD_NUMBER: _ClassVar[int]
    DICT_FIELD_NUMBER: _ClassVar[int]
    text: TextSpace
    discrete: DiscreteSpace
    box: BoxSpace
    dict: DictSpace
    def __init__(self, text: _Optional[_Union[TextSpace, _Mapping]] = ..., discrete: _Optional[_Union[DiscreteSpace, _Mapping]] = ..., box: _Optional[_Union[BoxSpace, _Mapping]] = ..., dict: _Optional[_Union[DictSpace, _Mapping]] = ...) -> None: ...

class TextSpace(_message.Message):
    __slots__ = ("min_length", "max_length", "charset")
    MIN_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_LENGTH_FIELD_NUMBER: _ClassVar[int]
    CHARSET_FIELD_NUMBER: _ClassVar[int]
    min_length: int
    max_length: int
    charset: str
    def __init__(self, min_length: _Optional[int] = ..., max_length: _Optional[int] = ..., charset: _Optional[str] = ...) -> None: ...

class DiscreteSpace(_message.Message):
    __slots__ = ("n", "start")
    N_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    n: int
    start: int
    def __init__(self, n: _Optional[int] = ..., start: _Optional[int] = ...) -> None: ...

class BoxSpace(_message.Message):
    __slots__ = ("low", "high", "shape", "dtype")
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    low: _containers.RepeatedScalarFieldContainer[float]
    high: _containers.RepeatedScalarFieldContainer[float]
    shape: _containers.RepeatedScalarFieldContainer[int]
    dtype: str
    def __init__(self, low: _Optional[_Iterable[float]] = ..., high: _Optional[_Iterable[float]] = ..., shape: _Optional[_Iterable[int]] = ..., dtype: _Optional[str] = ...) -> None: ...

class DictSpace(_message.Message):
    __slots__ = ("spaces",)
    class SpacesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Space
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Space, _Mapping]] = ...) -> None: ...
    SPACES_FIELD_NUMBER: _ClassVar[int]
    spaces: _containers.MessageMap[str, Space]
    def __init__(self, spaces: _Optional[_Mapping[str, Space]] = ...) -> None: ...

class AgentSpec(_message.Message):
    __slots__ = ("agent", "observation_space", "action_space")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_SPACE_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPACE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    observation_space: Space
    action_space: Space
    def __init__(self, agent: _Optional[str] = ..., observation_space: _Optional[_Union[Space, _Mapping]] = ..., action_space: _Optional[_Union[Space, _Mapping]] = ...) -> None: ...

class EnvSpec(_message.Message):
    __slots__ = ("env_id", "kind", "observation_space", "action_space", "agents", "max_num_agents", "metadata_json")
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_SPACE_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPACE_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_NUM_AGENTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    env_id: str
    kind: EnvKind
    observation_space: Space
    action_space: Space
    agents: _containers.RepeatedCompositeFieldContainer[AgentSpec]
    max_num_agents: int
    metadata_json: str
    def __init__(self, env_id: _Optional[str] = ..., kind: _Optional[_Union[EnvKind, str]] = ..., observation_space: _Optional[_Union[Space, _Mapping]] = ..., action_space: _Optional[_Union[Space, _Mapping]] = ..., agents: _Optional[_Iterable[_Union[AgentSpec, _Mapping]]] = ..., max_num_agents: _Optional[int] = ..., metadata_json: _Optional[str] = ...) -> None: ...

class EnvInfo(_message.Message):
    __slots__ = ("env_id", "kinds", "description", "default_spec")
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_SPEC_FIELD_NUMBER: _ClassVar[int]
    env_id: str
    kinds: _containers.RepeatedScalarFieldContainer[EnvKind]
    description: str
    default_spec: EnvSpec
    def __init__(self, env_id: _Optional[str] = ..., kinds: _Optional[_Iterable[_Union[EnvKind, str]]] = ..., description: _Optional[str] = ..., default_spec: _Optional[_Union[EnvSpec, _Mapping]] = ...) -> None: ...

class ListEnvsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListEnvsResponse(_message.Message):
    __slots__ = ("envs",)
    ENVS_FIELD_NUMBER: _ClassVar[int]
    envs: _containers.RepeatedCompositeFieldContainer[EnvInfo]
    def __init__(self, envs: _Optional[_Iterable[_Union[EnvInfo, _Mapping]]] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("env_id", "kind", "kwargs_json")
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    KWARGS_JSON_FIELD_NUMBER: _ClassVar[int]
    env_id: str
    kind: EnvKind
    kwargs_json: str
    def __init__(self, env_id: _Optional[str] = ..., kind: _Optional[_Union[EnvKind, str]] = ..., kwargs_json: _Optional[str] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session_id", "spec")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    spec: EnvSpec
    def __init__(self, session_id: _Optional[str] = ..., spec: _Optional[_Union[EnvSpec, _Mapping]] = ...) -> None: ...

class ResetRequest(_message.Message):
    __slots__ = ("session_id", "seed", "options_json")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    seed: int
    options_json: str
    def __init__(self, session_id: _Optional[str] = ..., seed: _Optional[int] = ..., options_json: _Optional[str] = ...) -> None: ...

class ResetResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: EnvState
    def __init__(self, state: _Optional[_Union[EnvState, _Mapping]] = ...) -> None: ...

class AgentActions(_message.Message):
    __slots__ = ("actions",)
    class ActionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Value, _Mapping]] = ...) -> None: ...
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: _containers.MessageMap[str, Value]
    def __init__(self, actions: _Optional[_Mapping[str, Value]] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("session_id", "action", "actions")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    action: Value
    actions: AgentActions
    def __init__(self, session_id: _Optional[str] = ..., action: _Optional[_Union[Value, _Mapping]] = ..., actions: _Optional[_Union[AgentActions, _Mapping]] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("state",)
    STATE_FIELD_NUMBER: _ClassVar[int]
    state: EnvState
    def __init__(self, state: _Optional[_Union[EnvState, _Mapping]] = ...) -> None: ...

class RenderRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class RenderResponse(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentState(_message.Message):
    __slots__ = ("agent", "observation", "reward", "cumulative_reward", "terminated", "truncated", "info_json")
    AGENT_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    CUMULATIVE_REWARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    agent: str
    observation: Value
    reward: float
    cumulative_reward: float
    terminated: bool
    truncated: bool
    info_json: str
    def __init__(self, agent: _Optional[str] = ..., observation: _Optional[_Union[Value, _Mapping]] = ..., reward: _Optional[float] = ..., cumulative_reward: _Optional[float] = ..., terminated: _Optional[bool] = ..., truncated: _Optional[bool] = ..., info_json: _Optional[str] = ...) -> None: ...

class EnvState(_message.Message):
    __slots__ = ("agents", "live_agents", "agent_selection")
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    LIVE_AGENTS_FIELD_NUMBER: _ClassVar[int]
    AGENT_SELECTION_FIELD_NUMBER: _ClassVar[int]
    agents: _containers.RepeatedCompositeFieldContainer[AgentState]
    live_agents: _containers.RepeatedScalarFieldContainer[str]
    agent_selection: str
    def __init__(self, agents: _Optional[_Iterable[_Union[AgentState, _Mapping]]] = ..., live_agents: _Optional[_Iterable[str]] = ..., agent_selection: _Optional[str] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class BatchItem(_message.Message):
    __slots__ = ("reset", "step")
    RESET_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    reset: ResetRequest
    step: StepRequest
    def __init__(self, reset: _Optional[_Union[ResetRequest, _Mapping]] = ..., step: _Optional[_Union[StepRequest, _Mapping]] = ...) -> None: ...

class BatchRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[BatchItem]
    def __init__(self, items: _Optional[_Iterable[_Union[BatchItem, _Mapping]]] = ...) -> None: ...

class BatchResult(_message.Message):
    __slots__ = ("state", "error")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    state: EnvState
    error: Error
    def __init__(self, state: _Optional[_Union[EnvState, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class BatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchResult, _Mapping]]] = ...) -> None: ...
