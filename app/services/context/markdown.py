"""The context loader's Markdown: each item as a heading, a meta line and its text, stored
text kept as content (never structure), long text cut with a visible marker."""

import re

from app.services.context import evidence
from app.services.records import Entry, Event, Scope
from app.tokens import cut_to_tokens, estimate_tokens

# Stored text is content, never structure: the loader's headings (`## `, `### ` items) and
# blank-line separators are its own. Rows stored before a rule existed may hold anything.
# What ends a line for a Markdown reader or a model: CR, NEL, LINE and PARAGRAPH SEPARATOR.
_LINE_ENDS = re.compile(r"\r\n?|[\x85\u2028\u2029]")
# Anything that would break a heading or meta line: controls (C0, C1, DEL) and line ends.
_NOT_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# A body line that would start structure of its own, also within a quote or list item: an
# ATX heading, a code fence (which would swallow the items after it), an HTML block, a
# setext underline (making the line above a heading). A backslash before it makes it text
# (CommonMark's escape).
_BLOCK_START = re.compile(
    r"^((?: {0,3}(?:>[ \t]?|(?:[-+*]|\d{1,9}[.)])[ \t]+))* {0,3})"
    r"(?=#{1,6}(?:[ \t]|$)|`{3,}|~{3,}|<[A-Za-z!?/]|(?:=+|-+)[ \t]*$)",
    re.MULTILINE,
)


def one_line(text: str) -> str:
    """`text` as part of a heading or meta line: every control or line end a space."""
    return _NOT_ONE_LINE.sub(" ", text)


def content(text: str) -> str:
    """A summary or body as Markdown text under its item: its lines can start no heading,
    fence or HTML block, and its line ends are newlines."""
    text = _LINE_ENDS.sub("\n", text.strip())
    return _BLOCK_START.sub(r"\1\\", text)


def _label(scope: Scope, scope_ref: str | None) -> str:
    return scope.value if scope_ref is None else f"{scope.value}/{one_line(scope_ref)}"


def _passages(
    text: str, item_id: str, q: evidence.Question | None, room: int, *, neighbours: bool
) -> str:
    """`text`, or (asked a question, the text long) the passages that answer it and a note
    of what was left out."""
    if q is None:
        return text
    found = evidence.passage_text(text.strip(), q, room, neighbours=neighbours)
    if found is None:
        return text
    shown, elided = found
    return f"{shown}\n[{elided} more lines or sentences not shown: see {item_id}]"


def render_entry(e: Entry, q: evidence.Question | None = None, room: int = 0) -> str:
    meta = [
        f"`{e.id}`",
        _label(e.scope, e.scope_ref),
        f"updated {e.updated_at:%Y-%m-%d}",
        f"importance {e.importance}/5",
    ]
    if e.tags:
        meta.append("tags: " + one_line(", ".join(e.tags)))
    body = content(_passages(e.summary, e.id, q, room, neighbours=True))
    return f"### {one_line(e.title)}\n{' · '.join(meta)}\n\n{body}"


def render_event(e: Event, q: evidence.Question | None = None, room: int = 0) -> str:
    when = f"{e.occurred_at:%Y-%m-%d %H:%M} UTC"
    head = f"### {one_line(e.kind)} · {_label(e.scope, e.scope_ref)} · {when} · `{e.id}`"
    # An event's neighbours are the events beside it (evidence.py): within one turn the
    # passages keep to the sentences holding the words, so more turns fit.
    return f"{head}\n\n{content(_passages(e.body, e.id, q, room, neighbours=False))}"


# The end of an event's heading line when an older item packed below it speaks of the same
# thing: short, since most items on a question get it.
NEWER = " · newer"


def _marker(chars_left: int, item_id: str) -> str:
    return f"… [truncated: {chars_left} more characters, see {item_id}]\n\n"


def cut_to_fit(text: str, item_id: str, room: int, *, first: bool) -> str | None:
    """`text` cut to fit `room` tokens with a visible marker, or None if not worth it.

    The first item of a section is always cut rather than dropped (an agent learns it
    exists and its id); a later one only if its first line (title or kind) still fits.
    """
    # Size the marker for the longest count it could show; the real one is no longer.
    for_text = room - estimate_tokens("\n" + _marker(len(text), item_id))
    if for_text < 0:
        return None
    prefix = cut_to_tokens(text, for_text)
    space = max(prefix.rfind(" "), prefix.rfind("\n"))
    if space > 0 and space > len(prefix) - 40:  # end on a word boundary when one is close
        prefix = prefix[:space]
    prefix = prefix.rstrip()
    if len(prefix) < len(text.split("\n", 1)[0]):  # a broken-off title helps nobody
        if not first:
            return None
        prefix = ""
    marker = _marker(len(text) - len(prefix), item_id)
    return f"{prefix}\n{marker}" if prefix else marker
