"""Kriti's errors: codes, messages and source spans as kriti-lang reports them
(`src/Kriti/Error.hs`, `src/Kriti/Parser/Monad.hs`, `src/Kriti/Eval.hs`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# kriti-lang's `ErrorCode` rendered by its `Pretty` instance (`src/Kriti/Error.hs`).
PARSE_ERROR = "Parse Error"
LEX_ERROR = "Lex Error"
ATTRIBUTE_ERROR = "Attribute Error"
NAME_ERROR = "Name Error"
TYPE_ERROR = "Type Error"
INDEX_ERROR = "Index Error"
FUNCTION_ERROR = "Function Error"


@dataclass(frozen=True, slots=True)
class Span:
    """A source range: lines from 0, columns from 1, the end exclusive (kriti-lang's
    `AlexSourcePos`, `src/Kriti/Parser/Spans.hs`; the lexer starts at line 0, column 1)."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int

    def join(self, other: Span) -> Span:
        """From this span's start to `other`'s end (`Semigroup Span`)."""
        return Span(self.start_line, self.start_column, other.end_line, other.end_column)

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.start_line, self.start_column, self.end_line, self.end_column)


class KritiError(Exception):
    """A template that cannot be parsed or evaluated.

    `error_code` is kriti-lang's code text (`"Parse Error"`, `"Type Error"`, …),
    `message` its message, `span` `(start_line, start_column, end_line, end_column)`
    (lines from 0, columns from 1, end exclusive) or None. `serialize()` is kriti-lang's
    `ToJSON SerializedError` (`src/Kriti/Error.hs`)."""

    def __init__(self, error_code: str, message: str = "", span: Span | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.span: tuple[int, int, int, int] | None = span.as_tuple() if span else None

    def serialize(self) -> dict[str, Any]:
        """`{"error_code", "message", "source_position": {"start_line", "start_column",
        "end_line", "end_column"}}`; a span-less error gives zeros."""
        sl, sc, el, ec = self.span or (0, 0, 0, 0)
        return {
            "error_code": self.error_code,
            "message": self.message,
            "source_position": {
                "start_line": sl,
                "start_column": sc,
                "end_line": el,
                "end_column": ec,
            },
        }

    def __str__(self) -> str:
        where = f" at {self.span[0]}:{self.span[1]}" if self.span else ""
        return f"{self.error_code}: {self.message}{where}"


class KritiParseError(KritiError):
    """The lexer or parser refused the template (`Lex Error`, `Parse Error`)."""


class KritiEvalError(KritiError):
    """Evaluation failed (`Attribute Error`, `Name Error`, `Type Error`, `Index Error`,
    `Function Error`)."""


class CustomFunctionError(Exception):
    """Raised by a template function (basic or caller-supplied) to fail with `message`;
    evaluation reports it as a `Function Error` at the argument's span
    (kriti-lang's `CustomFunctionError`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
