"""Type hints of einsql's native module (python/src/*.rs)."""

from typing import Any, Optional

import pyarrow

__version__: str

class Database:
    """An einsql database, in memory or in a directory."""

    def __init__(self, path: Optional[str] = None) -> None: ...
    def execute(self, text: str) -> QueryResult:
        """Runs every statement of ``text``; the last one's result."""
    def register(
        self,
        name: str,
        data: Any,
        keys: Optional[list[str]] = None,
        values: Optional[list[str]] = None,
    ) -> str:
        """Stores Arrow data as table ``name`` (replacing one); what changed."""
    def table(self, name: str) -> QueryResult:
        """The stored rows of table ``name`` with einsql's field metadata."""
    def table_names(self) -> list[str]:
        """The names of all tables, in alphabetical order."""
    @property
    def persistent(self) -> bool:
        """Whether changes are kept in a directory."""
    def interrupt(self) -> None:
        """Stops the statements running on this database."""

class QueryResult:
    """The rows of one statement."""

    @property
    def message(self) -> Optional[str]:
        """What a statement without rows did; None for a query."""
    @property
    def num_rows(self) -> int:
        """The number of rows."""
    def to_arrow(self) -> pyarrow.Table:
        """The rows as a pyarrow.Table sharing the result's buffers."""

class Error(Exception):
    """Base class of every einsql error."""

    line: int
    column: int

class IoError(Error): ...
class FileFormatError(Error): ...
class UnsupportedFileError(Error): ...
class ParseError(Error): ...
class NotSupportedError(Error): ...
class UnknownNameError(Error): ...
class TableExistsError(Error): ...
class IndexExistsError(Error): ...
class TypeMismatchError(Error): ...
class InvalidInputError(Error): ...
class CancelledError(Error): ...
class IntegerOverflowError(Error): ...
class OutOfMemoryError(Error): ...
class InternalError(Error): ...
class CatalogError(Error): ...
class ArrowError(Error): ...
class ParquetError(Error): ...
