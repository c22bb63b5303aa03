from typing import Any, Optional, Tuple

class Operator:
    """An operator over a primitive element, from its IR text."""

    def __init__(self, text: str, structs: list[str] = ..., commutative: bool = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def element(self) -> str: ...
    @property
    def ir(self) -> str: ...
    @property
    def identity(self) -> Any: ...
    def combine(self, x: Any, y: Any) -> Any: ...
    def cuda_source(self) -> str: ...
    def scan_bytes(
        self, data: bytes, inclusive: bool, reverse: bool, init: Optional[Any] = ..., row_length: Optional[int] = ...
    ) -> Tuple[bytes, Any]: ...
    @property
    def element_size(self) -> int: ...
    def gpu_scan(
        self,
        device: int,
        stream: int,
        input: int,
        output: int,
        n: int,
        inclusive: bool,
        reverse: bool,
        init: Optional[bytes] = ...,
        row_length: Optional[int] = ...,
        columns: Optional[int] = ...,
        heads: Optional[int] = ...,
        offsets: Optional[Tuple[int, int, int]] = ...,
        keys: Optional[Tuple[int, int]] = ...,
        totals: Optional[Tuple[int, int]] = ...,
        count: Optional[int] = ...,
    ) -> None: ...

    def wait_for_background_compiles(self) -> None: ...

def gpu_unavailable_reason() -> Optional[str]: ...

class DeviceBuffer:
    """Device memory of the package's own, given away through DLPack."""

    def __init__(self, device: int, shape: list[int], typestr: str, data: Optional[bytes] = ...) -> None: ...
    @property
    def stream(self) -> int: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def __cuda_array_interface__(self) -> dict: ...
    def to_bytes(self) -> bytes: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(self, **kwargs: Any) -> Any: ...

def own_stream(device: int) -> int: ...
def sort_bytes(
    data: bytes, typestr: str, descending: bool = ..., indices: bool = ..., offsets: Optional[list[int]] = ...
) -> bytes: ...
def gpu_sort(
    device: int,
    stream: int,
    keys: int,
    n: int,
    typestr: str,
    descending: bool = ...,
    indices: Optional[int] = ...,
    offsets: Optional[Tuple[int, int, int]] = ...,
) -> None: ...

class Stage:
    """A predicate or an equality over an element, from its IR text."""

    def __init__(self, text: str, structs: list[str] = ...) -> None: ...
    @property
    def ir(self) -> str: ...
    @property
    def element(self) -> str: ...
    def cuda_source(self) -> str: ...
    def __call__(self, a: Any, b: Optional[Any] = ...) -> bool: ...
    def select_bytes(self, data: bytes) -> Tuple[bytes, int]: ...
    def partition_bytes(self, data: bytes, in_order: bool) -> Tuple[bytes, int]: ...
    def unique_bytes(self, data: bytes) -> bytes: ...
    def run_length_encode_bytes(self, data: bytes) -> Tuple[bytes, bytes]: ...
    def partition_three_bytes(self, data: bytes, second: "Stage") -> Tuple[bytes, Tuple[int, int]]: ...
    def non_trivial_runs_bytes(self, data: bytes) -> Tuple[bytes, bytes]: ...
    def gpu_compact(
        self,
        device: int,
        stream: int,
        kernel: str,
        input: int,
        n: int,
        output: int,
        count: int,
        lengths: Optional[int] = ...,
        in_order: bool = ...,
        second: Optional["Stage"] = ...,
    ) -> None: ...

def gpu_reduce_by_key(
    equality: Stage,
    op: Operator,
    device: int,
    stream: int,
    keys: int,
    values: int,
    n: int,
    keys_out: int,
    values_out: int,
    count: int,
) -> None: ...

class DlpackView:
    """A tensor another library gave through DLPack, as an array interface."""

    def __init__(self, capsule: Any) -> None: ...
    @property
    def device(self) -> Tuple[int, int]: ...
    @property
    def on_host(self) -> bool: ...
    @property
    def __cuda_array_interface__(self) -> dict: ...

class SortKeyFn:
    """A sort key of records, from its IR text."""

    def __init__(self, text: str, structs: list[str] = ...) -> None: ...
    @property
    def ir(self) -> str: ...
    @property
    def element_size(self) -> int: ...
    def cuda_source(self) -> str: ...
    def key_of(self, record: bytes) -> Tuple[Any, ...]: ...
    def argsort_bytes(self, data: bytes, descending: bool) -> bytes: ...
    def gpu_sort(
        self, device: int, stream: int, records: int, n: int, descending: bool = ..., indices: Optional[int] = ...
    ) -> None: ...

def recurrence_bytes(
    real: str,
    sequences: int,
    steps: int,
    state: int,
    time_major: bool,
    kind: str,
    a: bytes,
    b: bytes,
    initial: Optional[bytes] = ...,
    readout: Optional[bytes] = ...,
    reverse: bool = ...,
) -> bytes: ...
def gpu_recurrence(
    device: int,
    stream: int,
    real: str,
    sequences: int,
    steps: int,
    state: int,
    time_major: bool,
    kind: str,
    a: Tuple[int, int],
    b: Tuple[int, int],
    out: Tuple[int, int],
    initial: Optional[Tuple[int, int]] = ...,
    readout: Optional[Tuple[int, int]] = ...,
    reverse: bool = ...,
) -> None: ...

def spmv_bytes(real: str, width: int, cols: int, row_ptr: bytes, col_idx: bytes, vals: bytes, x: bytes) -> bytes: ...
def gpu_spmv(
    device: int,
    stream: int,
    real: str,
    width: int,
    cols: int,
    row_ptr: Tuple[int, int],
    col_idx: Tuple[int, int],
    vals: Tuple[int, int],
    x: Tuple[int, int],
    y: Tuple[int, int],
) -> None: ...
