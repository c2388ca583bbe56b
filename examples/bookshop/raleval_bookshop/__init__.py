"""A bookshop catalogue as a raleval environment: the smallest complete example.

Three tools over a world generated from a seed (books, authors, invented names, so no model
knows the answers), one task family whose every task carries a gold solution that is executed
against the tools before the task is emitted, and a default task set. Installed, it registers
through the ``raleval.envs`` entry point in its pyproject.toml; raleval is not edited.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from raleval.environment import Environment, ToolMisuse, ToolSpec
from raleval.families import TaskFamily, evaluate_answer, execute_solution
from raleval.records import Level, Task, ToolCall
from raleval.registry import register_env, register_task_family, register_task_set

_SYLLABLES = ["ka", "lo", "mi", "ren", "to", "va", "shi", "ber", "dun", "el", "qua", "zor"]


def _name(rng: random.Random, parts: int) -> str:
    return " ".join(
        "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
        for _ in range(parts)
    )


@dataclass(frozen=True)
class Book:
    book_id: str
    title: str
    author_id: str
    year: int


@dataclass(frozen=True)
class Author:
    author_id: str
    name: str
    born: int


def generate_world(seed: int = 0, n_authors: int = 30) -> tuple[dict[str, Book], dict[str, Author]]:
    """Authors with two to four books each; names and titles are invented."""
    rng = random.Random(seed)
    authors, books = {}, {}
    for i in range(n_authors):
        author = Author(f"a{i:03d}", _name(rng, 2), rng.randint(1900, 1990))
        authors[author.author_id] = author
        for _ in range(rng.randint(2, 4)):
            book_id = f"b{len(books):04d}"
            title = f"The {_name(rng, 1)} of {_name(rng, 1)}"
            books[book_id] = Book(
                book_id, title, author.author_id, author.born + rng.randint(20, 60)
            )
    return books, authors


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchBookParams(_Params):
    title: str = Field(min_length=1, description="words of the book's title")


class BookIdParams(_Params):
    book_id: str = Field(min_length=1, description="a book_id from searchBook")


class AuthorIdParams(_Params):
    author_id: str = Field(min_length=1, description="an author_id from getBook")


class BookshopEnv(Environment):
    name = "bookshop"
    description = "A bookshop catalogue: searchBook, getBook, getAuthor"

    def __init__(self, seed: int = 0) -> None:
        self.books, self.authors = generate_world(seed)

        def search_book(title: str) -> list[dict[str, str]]:
            words = title.lower().split()
            hits = [b for b in self.books.values() if all(w in b.title.lower() for w in words)]
            return [{"book_id": b.book_id, "title": b.title} for b in hits[:5]]

        def get_book(book_id: str) -> dict[str, object]:
            book = self.books.get(book_id)
            if book is None:
                raise ToolMisuse(f"no book {book_id!r}", "unknown_id")
            return {"title": book.title, "author_id": book.author_id, "year": book.year}

        def get_author(author_id: str) -> dict[str, object]:
            author = self.authors.get(author_id)
            if author is None:
                raise ToolMisuse(f"no author {author_id!r}", "unknown_id")
            return {"name": author.name, "born": author.born}

        super().__init__(
            [
                ToolSpec(
                    "searchBook",
                    "Find books by title words.",
                    SearchBookParams,
                    "list[dict]",
                    search_book,
                    matching="fuzzy",
                ),
                ToolSpec(
                    "getBook", "A book's title, author_id and year.", BookIdParams, "dict", get_book
                ),
                ToolSpec(
                    "getAuthor",
                    "An author's name and birth year.",
                    AuthorIdParams,
                    "dict",
                    get_author,
                ),
            ]
        )


@register_env("bookshop", default_tasks="bookshop")
def make_bookshop_env(seed: int = 0) -> BookshopEnv:
    """A bookshop catalogue (``-E seed=N``): searchBook, getBook, getAuthor."""
    return BookshopEnv(int(seed))


def _author_birth_year(env: BookshopEnv, n: int, seed: int) -> list[Task]:
    """ "When was the author of <title> born?": search, read the book, read its author."""
    rng = random.Random(seed)
    tasks: list[Task] = []
    for book in rng.sample(sorted(env.books.values(), key=lambda b: b.book_id), len(env.books)):
        if len(tasks) == n:
            break
        calls = [ToolCall(tool="searchBook", arguments={"title": book.title})]
        hits = execute_solution(env, calls)[0]
        if [h["book_id"] for h in hits] != [book.book_id]:
            continue  # the title is not unique: the question would be ambiguous
        calls += [
            ToolCall(tool="getBook", arguments={"book_id": book.book_id}),
            ToolCall(tool="getAuthor", arguments={"author_id": book.author_id}),
        ]
        expr = "r2['born']"
        answer = evaluate_answer(expr, execute_solution(env, calls))  # the gold, executed
        tasks.append(
            Task(
                id=f"bookshop-born-s{seed}-{len(tasks):04d}",
                domain="bookshop",
                level=Level.KS,
                family="bookshop-born",
                question=f"In what year was the author of {book.title} born?",
                answers=[answer],
                answer_type="year",
                solution=calls,
                metadata={"answer_expr": expr},
            )
        )
    return tasks


register_task_family("bookshop-born")(
    TaskFamily(
        id="bookshop-born",
        level=Level.KS,
        domain="bookshop",
        env="bookshop",
        metric="f1",
        description="Bookshop KS: the birth year of a book's author (three calls)",
        generate=_author_birth_year,
    )
)
register_task_set("bookshop")(["bookshop-born"])
