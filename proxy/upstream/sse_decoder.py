"""Server-sent events from body chunks, for the lean POST path (proxy/upstream/post_pool.py).

The event stream format of the WHATWG HTML standard (lines end in CRLF, LF
or CR; `:` starts a comment; `data` lines join with LF; the last event id
carries over to later events), producing the `httpx2.ServerSentEvent` values
the SDK transport's `_handle_sse_event` takes. Event for event it agrees with
httpx2's `EventSource`, which the tests check on generated streams,
including the empty-data "priming" events MCP servers send for resumption.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from httpx2 import ServerSentEvent


class SSEError(Exception):
    pass


class SSEDecoder:
    def __init__(self, max_event_size: int | None = None) -> None:
        self._max = max_event_size
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""  # an unterminated line
        self._cr = False  # the last chunk ended in CR: a LF opening the next one belongs to it
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self._last_id = ""
        self._retry: int | None = None
        self._pending = False

    def feed(self, chunk: bytes) -> Iterator[ServerSentEvent]:
        text = self._text.decode(chunk)
        if not text:  # an empty chunk, or half a character: nothing to say about a pending CR yet
            return
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = text.endswith("\r")
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            self._tail += text
            self._check(len(self._tail))
            return  # an event ends at an empty line; an undispatched one at the end of the body is dropped
        lines = text.split("\n")
        lines[0] = self._tail + lines[0]
        self._tail = lines.pop()
        for line in lines:
            sse = self._line(line)
            if sse is not None:
                yield sse
        self._check(len(self._tail))

    def _check(self, pending: int) -> None:
        if self._max is not None and self._size + pending > self._max:
            raise SSEError(f"Server-sent event exceeded the {self._max} byte limit.")

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            self._size = 0
            if not self._pending:
                return None
            sse = ServerSentEvent(event=self._event or "message", data="\n".join(self._data),
                                  id=self._last_id, retry=self._retry)
            self._event, self._data, self._retry, self._pending = "", [], None, False
            return sse
        if line[0] == ":":
            return None
        self._size += len(line) if line.isascii() else len(line.encode("utf-8"))
        self._check(0)
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
            self._pending = True
        elif field == "event":
            self._event = value
            self._pending = True
        elif field == "id":
            if "\0" not in value:
                self._last_id = value
                self._pending = True
        elif field == "retry":
            try:
                self._retry = int(value)
                self._pending = True
            except ValueError:
                pass
        return None
