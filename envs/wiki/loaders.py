"""Corpus loaders: every supported format becomes a stream of pages for :class:`StoreWriter`.

Formats: JSON lines of ``{title, text}``; HotpotQA / 2WikiMultihopQA distractor files (each
question's ``context`` paragraphs become pages, merged by title across questions); MuSiQue
(``paragraphs`` with ``title`` and ``paragraph_text``); a MediaWiki XML dump (``.xml`` or
``.xml.bz2``), parsed as a stream so a 1 GB dump needs constant memory. A malformed record
fails with its path, line (or record number) and the field at fault.
"""

from __future__ import annotations

import bz2
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree

from raleval.envs.wiki.store import StoreWriter, WikiStore


class CorpusFormatError(ValueError):
    """A corpus file that cannot be read; the message names file, line and field."""


@dataclass(frozen=True)
class Item:
    """A page, or a redirect when ``redirect_to`` is set."""

    title: str
    text: str = ""
    redirect_to: str | None = None


def _fail(path: Path, where: str, field: str, problem: str) -> CorpusFormatError:
    return CorpusFormatError(f"{path}:{where}: field {field!r}: {problem}")


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(location, record) from a JSON array file or a JSON-lines file."""
    with _open_text(path) as fh:
        head = fh.read(1)
        while head and head.isspace():
            head = fh.read(1)
        if head == "[":
            fh.seek(0)
            try:
                data = json.load(fh)
            except json.JSONDecodeError as exc:
                raise _fail(path, f"{exc.lineno}", "<json>", f"invalid JSON: {exc.msg}") from exc
            for i, rec in enumerate(data):
                yield f"record {i}", rec
            return
        fh.seek(0)
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield str(lineno), json.loads(line)
            except json.JSONDecodeError as exc:
                raise _fail(path, str(lineno), "<json>", f"invalid JSON: {exc.msg}") from exc


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _need(rec: Any, field: str, typ: type | tuple[type, ...], path: Path, where: str) -> Any:
    if not isinstance(rec, dict):
        raise _fail(path, where, "<record>", "expected a JSON object")
    if field not in rec:
        raise _fail(path, where, field, "missing")
    value = rec[field]
    if not isinstance(value, typ):
        name = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise _fail(path, where, field, f"expected {name}, got {type(value).__name__}")
    return value


def read_pages_jsonl(path: Path) -> Iterator[Item]:
    """``{"title": ..., "text": ...}`` per line (paragraphs separated by blank lines)."""
    for where, rec in _records(path):
        title = _need(rec, "title", str, path, where)
        if not title.strip():
            raise _fail(path, where, "title", "empty")
        yield Item(title, _need(rec, "text", str, path, where))


def read_hotpot(path: Path) -> Iterator[Item]:
    """HotpotQA / 2WikiMultihopQA: ``context`` is a list of ``[title, [sentence, ...]]``."""
    for where, rec in _records(path):
        context = _need(rec, "context", list, path, where)
        for j, entry in enumerate(context):
            ok = (
                isinstance(entry, (list, tuple))
                and len(entry) == 2
                and isinstance(entry[0], str)
                and isinstance(entry[1], list)
                and all(isinstance(s, str) for s in entry[1])
            )
            if not ok:
                raise _fail(path, where, f"context[{j}]", "expected [title, [sentences]]")
            # HotpotQA sentences carry their leading space, 2Wiki sentences do not.
            # one sentence per line: the source's sentence boundaries (envs/wiki/page.py)
            yield Item(entry[0], "\n".join(s.strip() for s in entry[1]))


def read_musique(path: Path) -> Iterator[Item]:
    """MuSiQue: ``paragraphs`` is a list of ``{title, paragraph_text}``."""
    for where, rec in _records(path):
        paragraphs = _need(rec, "paragraphs", list, path, where)
        for j, para in enumerate(paragraphs):
            title = _need(para, "title", str, path, f"{where}: paragraphs[{j}]")
            text = _need(para, "paragraph_text", str, path, f"{where}: paragraphs[{j}]")
            yield Item(title, text)


def read_xml_dump(path: Path, on_progress: Callable[[int], None] | None = None) -> Iterator[Item]:
    """Main-namespace pages and redirects of a MediaWiki XML export, streamed.

    Wikitext becomes plain text with mwparserfromhell; ``on_progress`` gets the number of
    (compressed) bytes read so far.
    """
    import mwparserfromhell

    with open(path, "rb") as raw, bz2.open(raw) if path.suffix == ".bz2" else raw as stream:
        root = None
        count = 0
        try:
            for event, elem in ElementTree.iterparse(stream, events=("start", "end")):
                if root is None:
                    root = elem
                if event != "end" or _local(elem.tag) != "page":
                    continue
                item = _dump_page(elem, mwparserfromhell)
                root.clear()  # bounded memory: drop every finished page
                count += 1
                if on_progress is not None and count % 500 == 0:
                    on_progress(raw.tell())
                if item is not None:
                    yield item
        except ElementTree.ParseError as exc:
            line = exc.position[0] if exc.position else "?"
            raise _fail(path, str(line), "<xml>", f"malformed XML: {exc}") from exc
        if on_progress is not None:
            on_progress(raw.tell())


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(elem: ElementTree.Element, name: str) -> ElementTree.Element | None:
    for child in elem:
        if _local(child.tag) == name:
            return child
    return None


def _dump_page(elem: ElementTree.Element, mwp: Any) -> Item | None:
    title_el, ns_el = _child(elem, "title"), _child(elem, "ns")
    if title_el is None or not (title_el.text or "").strip():
        return None
    if ns_el is not None and (ns_el.text or "0").strip() != "0":
        return None
    title = title_el.text.strip()
    redirect = _child(elem, "redirect")
    if redirect is not None and redirect.get("title"):
        return Item(title, redirect_to=redirect.get("title"))
    revision = _child(elem, "revision")
    text_el = _child(revision, "text") if revision is not None else None
    wikitext = (text_el.text or "") if text_el is not None else ""
    # Headings become their own paragraphs; references, templates and markup are dropped.
    code = mwp.parse(wikitext)
    for ref in code.filter_tags(matches=lambda node: str(node.tag).lower() == "ref"):
        code.remove(ref)
    for heading in code.filter_headings():
        code.replace(heading, f"\n\n{heading.title.strip_code().strip()}\n\n")
    plain = code.strip_code(normalize=True, collapse=True)
    return Item(title, plain.strip())


READERS: dict[str, Callable[[Path], Iterator[Item]]] = {
    "pages": read_pages_jsonl,
    "hotpotqa": read_hotpot,
    "2wikimultihopqa": read_hotpot,
    "musique": read_musique,
    "xml": read_xml_dump,
}


def detect_format(path: Path) -> str:
    """Guess a corpus file's format from its name and its first record."""
    name = path.name.lower()
    if name.endswith((".xml", ".xml.bz2")):
        return "xml"
    try:
        _, first = next(iter(_records(path)))
    except StopIteration:
        return "pages"
    except CorpusFormatError as exc:
        raise CorpusFormatError(f"{exc}; cannot tell the corpus format from it") from exc
    if isinstance(first, dict):
        if "context" in first:
            return "hotpotqa"
        if "paragraphs" in first:
            return "musique"
        if "title" in first and "text" in first:
            return "pages"
    raise CorpusFormatError(
        f"{path}: cannot tell the corpus format; pass one of {', '.join(sorted(READERS))}"
    )


def build_store(
    out: Path, sources: list[Path], fmt: str | None = None, progress: bool = True
) -> dict[str, int]:
    """Build (or extend) the store ``out`` from corpus files; returns page counts."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    writer = StoreWriter(out)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        disable=not progress,
    ) as bar:
        for source in sources:
            source = Path(source)
            kind = fmt or detect_format(source)
            if kind not in READERS:
                raise CorpusFormatError(f"unknown corpus format {kind!r}")
            task = bar.add_task(source.name, total=source.stat().st_size)
            if kind == "xml":
                items = read_xml_dump(source, lambda n, t=task: bar.update(t, completed=n))
            else:
                items = READERS[kind](source)
            for item in items:
                if item.redirect_to is not None:
                    writer.add_redirect(item.title, item.redirect_to)
                else:
                    writer.add_page(item.title, item.text)
            bar.update(task, completed=source.stat().st_size)
    added, merged = writer.pages_added, writer.pages_merged
    writer.close({"sources": json.dumps([str(s) for s in sources])})
    store = WikiStore(out)
    store.warm()  # its title index and vocabulary, saved beside it for every later open
    store.close()
    return {"pages": added, "merged": merged}
