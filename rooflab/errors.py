"""The one exception type that reaches users: it names the file, the place and the problem."""

from __future__ import annotations


class RooflabError(Exception):
    """A problem with the user's input, reported as one line: `file:line: place: problem`.

    The CLI prints `str(err)` and exits with status 2; anything else that escapes is a bug.
    """

    def __init__(self, problem: str, *, file: str | None = None, line: int | None = None,
                 place: str | None = None):
        self.problem = problem
        self.file = file
        self.line = line
        self.place = place
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        place = f"{self.place}: " if self.place else ""
        return f"{where}{place}{self.problem}"

    def with_file(self, file: str) -> "RooflabError":
        """Return the same error with the file filled in where it was not known."""
        if self.file:
            return self
        return RooflabError(self.problem, file=file, line=self.line, place=self.place)
