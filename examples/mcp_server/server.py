"""A tiny MCP server for raleval's worked example: a library catalog with three tools.

Run it over stdio (what ``raleval run --env mcp -E command="python server.py"`` does) or over
streamable HTTP with ``python server.py --http`` (``-E url=http://127.0.0.1:8000/mcp``).
Any MCP server works the same way; this one is small enough to read in a minute.
"""

from __future__ import annotations

import sys

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

BOOKS = {
    "b1": {"title": "The Salt Road", "author_id": "a1", "year": 1998, "pages": 312},
    "b2": {"title": "Winter Orchard", "author_id": "a2", "year": 2004, "pages": 248},
    "b3": {"title": "Glass Harbour", "author_id": "a1", "year": 2011, "pages": 405},
    "b4": {"title": "A Map of Small Rivers", "author_id": "a3", "year": 2019, "pages": 190},
}
AUTHORS = {
    "a1": {"name": "Mara Ellison", "born": 1961, "country": "Ireland"},
    "a2": {"name": "Tomas Reyes", "born": 1970, "country": "Chile"},
    "a3": {"name": "Ines Okafor", "born": 1985, "country": "Nigeria"},
}

mcp = MCPServer("library")


@mcp.tool()
def search_books(query: str) -> list[dict]:
    """Find books whose title contains the query (case-insensitive): {book_id, title}."""
    q = query.strip().lower()
    return [
        {"book_id": k, "title": b["title"]} for k, b in BOOKS.items() if q in b["title"].lower()
    ]


@mcp.tool()
def get_book(book_id: str) -> dict:
    """Details of a book: {title, author_id, year, pages}."""
    if book_id not in BOOKS:
        raise ToolError(f"no book {book_id!r}; find ids with search_books")
    return BOOKS[book_id]


@mcp.tool()
def get_author(author_id: str) -> dict:
    """Details of an author: {name, born, country}."""
    if author_id not in AUTHORS:
        raise ToolError(f"no author {author_id!r}; author ids come from get_book")
    return AUTHORS[author_id]


if __name__ == "__main__":
    if "--http" in sys.argv:
        mcp.run("streamable-http", host="127.0.0.1", port=8000)
    else:
        mcp.run()
