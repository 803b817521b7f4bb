from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
DIRECTION_AGENT_TO_CLIENT: Direction
DIRECTION_CLIENT_TO_AGENT: Direction
DIRECTION_UNSPECIFIED: Direction
FINAL_TEXTS_CHANGES: FinalTexts
FINAL_TEXTS_UNSPECIFIED: FinalTexts
FINAL_TEXTS_WHOLE: FinalTexts
SHELL_OUTCOME_CANCELLED: ShellOutcome
SHELL_OUTCOME_FAILED: ShellOutcome
SHELL_OUTCOME_SUCCEEDED: ShellOutcome
SHELL_OUTCOME_UNKNOWN: ShellOutcome
SHELL_OUTCOME_UNSPECIFIED: ShellOutcome
SHELL_STATE_ENDED: ShellState
SHELL_STATE_PENDING: ShellState
SHELL_STATE_RUNNING: ShellState
SHELL_STATE_UNSPECIFIED: ShellState
TEXT_MODE_APPEND: TextMode
TEXT_MODE_REPLACE: TextMode
TEXT_MODE_UNSPECIFIED: TextMode

class AcpFrame(_message.Message):
    __slots__ = ["cwd", "dialect", "direction", "held_revisions", "held_sequence", "message", "sequence", "session_id"]
    class HeldRevisionsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    CWD_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    HELD_REVISIONS_FIELD_NUMBER: _ClassVar[int]
    HELD_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    cwd: str
    dialect: str
    direction: Direction
    held_revisions: _containers.ScalarMap[str, int]
    held_sequence: int
    message: bytes
    sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., dialect: _Optional[str] = ..., cwd: _Optional[str] = ..., sequence: _Optional[int] = ..., direction: _Optional[_Union[Direction, str]] = ..., message: _Optional[bytes] = ..., held_revisions: _Optional[_Mapping[str, int]] = ..., held_sequence: _Optional[int] = ...) -> None: ...

class DialectInfo(_message.Message):
    __slots__ = ["agent_names", "auth_method_ids", "detection_rules", "method_prefixes", "name", "summary"]
    AGENT_NAMES_FIELD_NUMBER: _ClassVar[int]
    AUTH_METHOD_IDS_FIELD_NUMBER: _ClassVar[int]
    DETECTION_RULES_FIELD_NUMBER: _ClassVar[int]
    METHOD_PREFIXES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    agent_names: _containers.RepeatedScalarFieldContainer[str]
    auth_method_ids: _containers.RepeatedScalarFieldContainer[str]
    detection_rules: _containers.RepeatedScalarFieldContainer[str]
    method_prefixes: _containers.RepeatedScalarFieldContainer[str]
    name: str
    summary: str
    def __init__(self, name: _Optional[str] = ..., agent_names: _Optional[_Iterable[str]] = ..., summary: _Optional[str] = ..., auth_method_ids: _Optional[_Iterable[str]] = ..., method_prefixes: _Optional[_Iterable[str]] = ..., detection_rules: _Optional[_Iterable[str]] = ...) -> None: ...

class FrameError(_message.Message):
    __slots__ = ["code", "message", "sequence", "session_id", "tool_call_id"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    sequence: int
    session_id: str
    tool_call_id: str
    def __init__(self, session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class GetClientCapabilitiesRequest(_message.Message):
    __slots__ = ["dialect"]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    dialect: str
    def __init__(self, dialect: _Optional[str] = ...) -> None: ...

class GetClientCapabilitiesResponse(_message.Message):
    __slots__ = ["client_capabilities_json", "dialect"]
    CLIENT_CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    client_capabilities_json: str
    dialect: str
    def __init__(self, client_capabilities_json: _Optional[str] = ..., dialect: _Optional[str] = ...) -> None: ...

class ListDialectsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListDialectsResponse(_message.Message):
    __slots__ = ["detection", "dialects"]
    DETECTION_FIELD_NUMBER: _ClassVar[int]
    DIALECTS_FIELD_NUMBER: _ClassVar[int]
    detection: str
    dialects: _containers.RepeatedCompositeFieldContainer[DialectInfo]
    def __init__(self, dialects: _Optional[_Iterable[_Union[DialectInfo, _Mapping]]] = ..., detection: _Optional[str] = ...) -> None: ...

class NormalizeRequest(_message.Message):
    __slots__ = ["frame", "options", "session_closed", "turn_ended"]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_CLOSED_FIELD_NUMBER: _ClassVar[int]
    TURN_ENDED_FIELD_NUMBER: _ClassVar[int]
    frame: AcpFrame
    options: StreamOptions
    session_closed: SessionClosed
    turn_ended: TurnEnded
    def __init__(self, frame: _Optional[_Union[AcpFrame, _Mapping]] = ..., turn_ended: _Optional[_Union[TurnEnded, _Mapping]] = ..., session_closed: _Optional[_Union[SessionClosed, _Mapping]] = ..., options: _Optional[_Union[StreamOptions, _Mapping]] = ...) -> None: ...

class NormalizeResponse(_message.Message):
    __slots__ = ["frame_error", "shell_exec"]
    FRAME_ERROR_FIELD_NUMBER: _ClassVar[int]
    SHELL_EXEC_FIELD_NUMBER: _ClassVar[int]
    frame_error: FrameError
    shell_exec: ShellExec
    def __init__(self, shell_exec: _Optional[_Union[ShellExec, _Mapping]] = ..., frame_error: _Optional[_Union[FrameError, _Mapping]] = ...) -> None: ...

class SessionClosed(_message.Message):
    __slots__ = ["sequence", "session_id"]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class ShellExec(_message.Message):
    __slots__ = ["agent_version", "approval_reason", "awaiting_approval", "background", "command", "cwd", "description", "dialect", "exit_code", "outcome", "outcome_reason", "output", "revision", "sequence", "session_id", "signal", "state", "stderr", "stdout", "terminal_id", "timed_out", "tool_call_id"]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REASON_FIELD_NUMBER: _ClassVar[int]
    AWAITING_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_REASON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_ID_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    agent_version: str
    approval_reason: str
    awaiting_approval: bool
    background: bool
    command: str
    cwd: str
    description: str
    dialect: str
    exit_code: int
    outcome: ShellOutcome
    outcome_reason: str
    output: ShellText
    revision: int
    sequence: int
    session_id: str
    signal: str
    state: ShellState
    stderr: ShellText
    stdout: ShellText
    terminal_id: str
    timed_out: bool
    tool_call_id: str
    def __init__(self, session_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., revision: _Optional[int] = ..., dialect: _Optional[str] = ..., command: _Optional[str] = ..., cwd: _Optional[str] = ..., description: _Optional[str] = ..., state: _Optional[_Union[ShellState, str]] = ..., outcome: _Optional[_Union[ShellOutcome, str]] = ..., exit_code: _Optional[int] = ..., signal: _Optional[str] = ..., timed_out: bool = ..., output: _Optional[_Union[ShellText, _Mapping]] = ..., stdout: _Optional[_Union[ShellText, _Mapping]] = ..., stderr: _Optional[_Union[ShellText, _Mapping]] = ..., approval_reason: _Optional[str] = ..., awaiting_approval: bool = ..., background: bool = ..., outcome_reason: _Optional[str] = ..., sequence: _Optional[int] = ..., terminal_id: _Optional[str] = ..., agent_version: _Optional[str] = ...) -> None: ...

class ShellText(_message.Message):
    __slots__ = ["mode", "text", "total_bytes", "truncated"]
    MODE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    mode: TextMode
    text: str
    total_bytes: int
    truncated: bool
    def __init__(self, text: _Optional[str] = ..., mode: _Optional[_Union[TextMode, str]] = ..., truncated: bool = ..., total_bytes: _Optional[int] = ...) -> None: ...

class StreamOptions(_message.Message):
    __slots__ = ["final_texts", "skip_applied_sequences"]
    FINAL_TEXTS_FIELD_NUMBER: _ClassVar[int]
    SKIP_APPLIED_SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    final_texts: FinalTexts
    skip_applied_sequences: bool
    def __init__(self, final_texts: _Optional[_Union[FinalTexts, str]] = ..., skip_applied_sequences: bool = ...) -> None: ...

class TurnEnded(_message.Message):
    __slots__ = ["cancelled", "sequence", "session_id"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    cancelled: bool
    sequence: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., sequence: _Optional[int] = ..., cancelled: bool = ...) -> None: ...

class FinalTexts(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Direction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ShellState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ShellOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TextMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
