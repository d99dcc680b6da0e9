"""`proxy.sse.SSEDecoder` against httpx2's `EventSource`, the reference it must agree with event for event.

The differential test generates event streams line by line (every field, comments, field names
without a colon, values with and without the leading space, NUL in ids, numeric and non-numeric
retry, non-ASCII text, empty lines, id-only "priming" events), ends each line with CRLF, LF or CR
at random, and feeds the UTF-8 bytes to the decoder in chunks cut at random, including inside
multi-byte characters and between a CR and its LF. The example tests pin the behaviour the proxy
relies on: priming events, the carried-over last event id, CR/LF across chunks, the dropped
unterminated event at the end of the body and the `max_event_size` limit.
"""

from __future__ import annotations

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.upstream.sse_decoder import SSEDecoder, SSEError
from tests.support.examples import examples

Event = tuple[str, str, str, int | None]


def _tuple(sse: httpx2.ServerSentEvent) -> Event:
    return (sse.event, sse.data, sse.id, sse.retry)


def reference(data: bytes) -> list[Event]:
    """What httpx2's EventSource yields for the whole body (one Response, iterated synchronously).

    One departure: httpx2 turns a CR that ends the body into a line end plus an
    empty line, and so dispatches an event no empty line ended (for CRLF or LF
    it does not). The standard discards an event the body ends inside, as
    SSEDecoder does, so the oracle sees such a CR as the CRLF it is equal to.
    """
    if data.endswith(b"\r"):
        data += b"\n"
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=data,
        request=httpx2.Request("GET", "http://sse.test/"),  # EventSource.__iter__ needs response.request
    )
    return [_tuple(sse) for sse in httpx2.EventSource(response)]


def decode(chunks: list[bytes], max_event_size: int | None = None) -> list[Event]:
    decoder = SSEDecoder(max_event_size)
    return [_tuple(sse) for chunk in chunks for sse in decoder.feed(chunk)]


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(points), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


# --- the stream generator ---------------------------------------------------------------------

ENDINGS = ("\r\n", "\n", "\r")
# Any text a line can hold: no line breaks, no lone surrogates (not encodable), NUL and non-ASCII allowed.
ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=8)
# Short text rich in the characters the parser looks at.
SHAPED_TEXT = st.text(st.sampled_from(list("ab :\0é€😀 ")), max_size=6)
TEXT = st.one_of(SHAPED_TEXT, ANY_TEXT)

ID_VALUE = st.one_of(
    st.integers(0, 10**6).map(str),
    TEXT,
    st.builds(lambda a, b: a + "\0" + b, SHAPED_TEXT, SHAPED_TEXT),  # an id with NUL is ignored
)
RETRY_VALUE = st.one_of(
    st.integers(0, 10**7).map(str),
    st.sampled_from(["", "x", "1a", "-1", "+3", " 5", "1_000", "1.5", "٣", "0x10"]),
    TEXT,
)
VALUE_BY_FIELD = {"data": TEXT, "event": TEXT, "id": ID_VALUE, "retry": RETRY_VALUE}
OTHER_NAMES = st.one_of(st.sampled_from(["Data", "ID", "dat", "datas", " data", "data ", "foo", "é"]), TEXT)


@st.composite
def field_line(draw: st.DrawFn) -> str:
    name = draw(st.one_of(st.sampled_from(sorted(VALUE_BY_FIELD)), OTHER_NAMES))
    if draw(st.integers(0, 9)) == 0:
        return name  # a field name without a colon: the whole line is the name, the value is empty
    value = draw(VALUE_BY_FIELD.get(name, TEXT))
    separator = draw(st.sampled_from([":", ": ", ":  "]))  # the parser strips exactly one leading space
    return name + separator + value


LINE_GROUP = st.one_of(
    field_line().map(lambda line: [line]),
    st.just([""]),  # an empty line dispatches the pending event
    st.sampled_from(["data:", "data: ", "data"]).map(lambda line: [line]),  # empty data
    TEXT.map(lambda text: [":" + text]),  # a comment
    ID_VALUE.map(lambda value: ["id: " + value, ""]),  # an id-only "priming" event
    st.lists(field_line(), max_size=4).map(lambda lines: [*lines, ""]),  # a whole event
)


@st.composite
def chunked_stream(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    lines = [line for group in draw(st.lists(LINE_GROUP, max_size=14)) for line in group]
    endings = draw(st.lists(st.sampled_from(ENDINGS), min_size=len(lines), max_size=len(lines)))
    text = "".join(line + ending for line, ending in zip(lines, endings))
    if lines and draw(st.booleans()):
        text = text[: -len(endings[-1])]  # the body may end inside its last line
    data = text.encode("utf-8")
    # Cut anywhere (repeated points give empty chunks) and, on purpose, right after a CR
    # and inside a multi-byte character (before a UTF-8 continuation byte).
    tricky = [i for i in range(1, len(data)) if data[i - 1] == 0x0D or 0x80 <= data[i] <= 0xBF]
    points = draw(st.lists(st.integers(0, len(data)), max_size=10))
    if tricky:
        points += draw(st.lists(st.sampled_from(tricky), max_size=6))
    return data, cut(data, points)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked_stream())
def test_agrees_with_httpx2_event_source_on_generated_chunked_streams(stream: tuple[bytes, list[bytes]]) -> None:
    data, chunks = stream
    assert decode(chunks) == reference(data), f"body={data!r} chunks={chunks!r}"


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\r\n\r\n"],
        [b"data: a\r", b"\n\r", b"\n"],
        [b"data: a\r", b"\ndata: b\r\n\r\n"],
        [b"data: \xc3", b"\xa9\xe2\x82", b"\xac\n\n"],
        [b"id: x\0y\n\n", b"id: 1\nid: 2\0\n\n"],
        [b"retry: 5\n\nretry: x\ndata\n\n"],
        [b"data: a\n\n", b"data: b\n"],
        # Found by the differential test, kept here so a regression names itself:
        [b"data: a\r", b"", b"\ndata: b\n\n"],  # an empty chunk between the CR and the LF of one line end
    ],
)
def test_agrees_with_httpx2_event_source_on(chunks: list[bytes]) -> None:
    assert decode(chunks) == reference(b"".join(chunks))


# --- focused examples ---------------------------------------------------------------------------


def test_id_only_priming_event_has_empty_data() -> None:
    assert decode([b"id: 7\n\n"]) == [("message", "", "7", None)]


def test_last_event_id_carries_over_to_later_events() -> None:
    body = b"id: 1\ndata: a\n\ndata: b\n\nevent: e\ndata: c\n\n"
    expected = [("message", "a", "1", None), ("message", "b", "1", None), ("e", "c", "1", None)]
    assert decode([body]) == expected
    assert decode([body[:9], body[9:20], body[20:]]) == expected


def test_cr_and_lf_split_across_chunks_are_one_line_end() -> None:
    decoder = SSEDecoder()
    assert list(decoder.feed(b"data: a\r")) == []
    assert list(decoder.feed(b"\ndata: b\r")) == []  # the LF closes the same line: no empty line, no dispatch
    assert list(decoder.feed(b"\n")) == []
    assert [_tuple(sse) for sse in decoder.feed(b"\r")] == [("message", "a\nb", "", None)]
    assert list(decoder.feed(b"\n")) == []  # ...and this LF belongs to that CR: nothing more


def test_event_not_terminated_by_an_empty_line_is_not_yielded() -> None:
    assert decode([b"data: a\n\n", b"data: b\n"]) == [("message", "a", "", None)]
    assert decode([b"data: a\n\n", b"data: b"]) == [("message", "a", "", None)]
    assert decode([b"data: a\r\n"]) == []
    assert decode([b"data: a\r"]) == []  # httpx2 dispatches this one (see reference()); the standard does not


# --- max_event_size -----------------------------------------------------------------------------


def test_event_over_the_size_limit_raises() -> None:
    body = b"data: " + b"x" * 100 + b"\n\n"
    with pytest.raises(SSEError):
        decode([body], max_event_size=50)
    # the reference enforces the same limit on the same body
    response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body,
                               request=httpx2.Request("GET", "http://sse.test/"))
    with pytest.raises(httpx2.SSEError):
        list(httpx2.EventSource(response, max_event_size=50))


def test_event_over_the_size_limit_raises_over_several_data_lines() -> None:
    with pytest.raises(SSEError):
        decode([b"data: " + b"x" * 20 + b"\n"] * 3 + [b"\n"], max_event_size=50)


def test_unterminated_oversized_line_across_chunks_raises() -> None:
    decoder = SSEDecoder(max_event_size=50)
    assert list(decoder.feed(b"data: " + b"x" * 30)) == []
    with pytest.raises(SSEError):
        list(decoder.feed(b"x" * 30))  # no line end yet: the buffered tail alone is over the limit


def test_unterminated_oversized_line_after_complete_lines_raises() -> None:
    decoder = SSEDecoder(max_event_size=50)
    assert list(decoder.feed(b"data: " + b"x" * 30 + b"\ndata: ")) == []
    with pytest.raises(SSEError):
        list(decoder.feed(b"y" * 20))  # 36 bytes of the event so far plus the 26 buffered


def test_events_under_the_size_limit_pass() -> None:
    body = b"data: " + b"x" * 40 + b"\n\n"
    # each event is under the limit, the stream as a whole is far over it: the size resets per event
    assert decode([body] * 5, max_event_size=50) == [("message", "x" * 40, "", None)] * 5
    assert decode([body[:10], body[10:]], max_event_size=46) == [("message", "x" * 40, "", None)]
    # comments do not count toward an event
    assert decode([b": " + b"c" * 100 + b"\n" + body], max_event_size=50) == [("message", "x" * 40, "", None)]


def test_size_limit_counts_utf8_bytes_of_complete_lines() -> None:
    body = "data: ééé\n\n".encode()  # a 12-byte line of 9 characters
    assert decode([body], max_event_size=12) == [("message", "ééé", "", None)]
    with pytest.raises(SSEError):
        decode([body], max_event_size=11)
