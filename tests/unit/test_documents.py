"""Unit tests for DocumentIndex (open documents and files read from disk)."""

from __future__ import annotations

import os
import threading

import pytest

from steerlsp.server.documents import positions as documents
from steerlsp.server.documents.encodings import UTF8, UTF16, UTF32
from steerlsp.server.documents.positions import DocumentIndex, split_lines

URI = "untitled:Untitled-1"
ASTRAL = "x = '😋'\ny = '🛒'\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", [""]),
        ("a", ["a"]),
        ("a\nb", ["a", "b"]),
        ("a\r\nb", ["a", "b"]),
        ("a\rb", ["a", "b"]),
        ("a\n", ["a", ""]),
        ("a\r\n\r\nb", ["a", "", "b"]),
        ("a\r\rb", ["a", "", "b"]),
        ("a\n\rb", ["a", "", "b"]),
        ("a\fb\u2028c\u2029d\x85e\x0bf\x1cg", ["a\fb\u2028c\u2029d\x85e\x0bf\x1cg"]),
    ],
)
def test_split_lines_only_on_lsp_terminators(text, expected):
    assert split_lines(text) == expected


@pytest.mark.parametrize("encoding", [UTF8, UTF16, UTF32])
def test_identity_when_encodings_are_equal(encoding, tmp_path):
    index = DocumentIndex(encoding, encoding)
    assert index.identity
    index.update(URI, ASTRAL)
    path = tmp_path / "a.py"
    path.write_text(ASTRAL, encoding="utf-8")
    assert index.lines_of(URI) is None
    assert index.lines_of(path.as_uri()) is None


def test_not_identity_when_encodings_differ():
    assert not DocumentIndex(UTF16, UTF32).identity


@pytest.mark.parametrize("client", [UTF8, UTF16])
def test_open_ascii_document_needs_no_conversion(client):
    index = DocumentIndex(client, UTF32)
    index.update(URI, "x = 1\ny = 2\n")
    assert index.lines_of(URI) is None


def test_open_document_with_astral_char_gives_lines():
    index = DocumentIndex(UTF16, UTF32)
    index.update(URI, ASTRAL)
    assert index.lines_of(URI) == ["x = '😋'", "y = '🛒'", ""]
    assert index.lines_of(URI) is index.lines_of(URI)  # cached


def test_bmp_only_text_differs_only_for_utf8():
    text = "名前 = 'é'\n"
    utf16 = DocumentIndex(UTF16, UTF32)
    utf16.update(URI, text)
    assert utf16.lines_of(URI) is None
    utf8 = DocumentIndex(UTF8, UTF32)
    utf8.update(URI, text)
    assert utf8.lines_of(URI) == ["名前 = 'é'", ""]


def test_update_replaces_text_and_lines():
    index = DocumentIndex(UTF16, UTF32)
    index.update(URI, ASTRAL)
    assert index.lines_of(URI)[0] == "x = '😋'"
    index.update(URI, "z = '🛒'\r\nw")
    assert index.lines_of(URI) == ["z = '🛒'", "w"]
    index.update(URI, "plain")
    assert index.lines_of(URI) is None


def test_forget_drops_open_document():
    index = DocumentIndex(UTF16, UTF32)
    index.update(URI, ASTRAL)
    index.forget(URI)
    assert index.lines_of(URI) is None
    index.forget(URI)  # forgetting twice is harmless
    assert index.lines_of(URI) is None


def test_open_document_wins_over_disk(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(ASTRAL, encoding="utf-8")
    uri = path.as_uri()
    index = DocumentIndex(UTF16, UTF32)
    index.update(uri, "plain = 1\n")
    assert index.lines_of(uri) is None
    index.forget(uri)
    assert index.lines_of(uri) == ["x = '😋'", "y = '🛒'", ""]


def test_unopened_file_is_read_from_disk(tmp_path):
    path = tmp_path / "lib.py"
    path.write_bytes("a = 1\r\nb = '😋'\rc\n".encode())
    index = DocumentIndex(UTF16, UTF32)
    assert index.lines_of(path.as_uri()) == ["a = 1", "b = '😋'", "c", ""]


def test_unopened_ascii_file_needs_no_conversion(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text("a = 1\n", encoding="utf-8")
    assert DocumentIndex(UTF16, UTF32).lines_of(path.as_uri()) is None


def test_disk_text_keeps_form_feed_and_line_separator(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text("a\f = '😋'\u2028b\nc\n", encoding="utf-8")
    assert DocumentIndex(UTF16, UTF32).lines_of(path.as_uri()) == ["a\f = '😋'\u2028b", "c", ""]


def test_invalid_utf8_on_disk_is_replaced(tmp_path):
    path = tmp_path / "bad.py"
    path.write_bytes(b"a = '\xff'\nb = '\xf0\x9f\x98\x8b'\n")
    assert DocumentIndex(UTF16, UTF32).lines_of(path.as_uri()) == ["a = '\ufffd'", "b = '😋'", ""]


@pytest.mark.parametrize(
    "uri",
    ["file:///definitely/not/here.py", "untitled:Untitled-2", "https://example.com/a.py"],
)
def test_missing_or_non_file_uris_give_none(uri):
    assert DocumentIndex(UTF16, UTF32).lines_of(uri) is None


def test_directory_uri_gives_none(tmp_path):
    assert DocumentIndex(UTF16, UTF32).lines_of(tmp_path.as_uri()) is None


def test_disk_cache_is_invalidated_when_the_file_changes(tmp_path):
    path = tmp_path / "lib.py"
    uri = path.as_uri()
    index = DocumentIndex(UTF16, UTF32)
    path.write_text("a = '😋'\n", encoding="utf-8")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    first = index.lines_of(uri)
    assert first == ["a = '😋'", ""]
    assert index.lines_of(uri) is first  # served from the cache

    path.write_text("b = '🛒'\n", encoding="utf-8")  # same size
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    assert index.lines_of(uri) == ["b = '🛒'", ""]

    path.write_text("plain\n", encoding="utf-8")
    assert index.lines_of(uri) is None

    path.unlink()
    assert index.lines_of(uri) is None


def test_disk_cache_is_bounded_by_bytes(tmp_path, monkeypatch):
    line = "v = '😋'" + "x" * 10_000
    (tmp_path / "probe.py").write_text(f"{line}\n", encoding="utf-8")
    cost = documents.read_disk_lines(str(tmp_path / "probe.py"), UTF16, UTF32).cost
    monkeypatch.setattr(documents, "DISK_CACHE_BYTES", 4 * cost + cost // 2)  # room for four
    index = DocumentIndex(UTF16, UTF32)
    for i in range(7):
        path = tmp_path / f"m{i}.py"
        path.write_text(f"{line}\n", encoding="utf-8")
        assert index.lines_of(path.as_uri()) == [line, ""]
    assert list(index._disk) == [str(tmp_path / f"m{i}.py") for i in (3, 4, 5, 6)]
    assert index._disk_bytes == sum(entry.cost for entry in index._disk.values())
    assert index._disk_bytes <= documents.DISK_CACHE_BYTES


def test_ascii_files_cost_the_cache_almost_nothing(tmp_path):
    index = DocumentIndex(UTF16, UTF32)
    path = tmp_path / "big_ascii.py"
    path.write_text("x = 1\n" * 100_000, encoding="utf-8")
    assert index.lines_of(path.as_uri()) is None
    assert index._disk_bytes < 1000


def _in_thread(call, timeout=5.0):
    """Run ``call`` on a daemon thread: a blocking read fails the test, not the run."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "blocked"
    return result[0]


def test_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    index = DocumentIndex(UTF16, UTF32)
    assert _in_thread(lambda: index.lines_of(fifo.as_uri())) is None
    assert index.unloaded([fifo.as_uri()]) == []
    # Swapped in after the stat: the non-blocking open and fstat still refuse it.
    assert _in_thread(lambda: documents.read_disk_lines(str(fifo), UTF16, UTF32)) is None


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/proc/self/status"])
def test_devices_and_pseudo_files_are_not_read(path):
    if not os.path.exists(path):
        pytest.skip(f"no {path}")
    index = DocumentIndex(UTF16, UTF32)
    uri = "file://" + path
    if path.startswith("/proc"):
        # A regular file by stat, with a size of 0: read, but capped like any other.
        assert _in_thread(lambda: index.lines_of(uri)) is None
    else:
        assert _in_thread(lambda: index.lines_of(uri)) is None
        assert _in_thread(lambda: documents.read_disk_lines(path, UTF16, UTF32)) is None
    assert index._disk_bytes <= 1000


def test_nul_in_a_uri_gives_none():
    assert DocumentIndex(UTF16, UTF32).lines_of("file:///tmp/a%00b.py") is None


def test_oversized_file_converts_only_lines_within_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "MAX_FILE_BYTES", 100)
    path = tmp_path / "huge.py"
    head = ["a = '😋'", "b = 2"]
    path.write_text("\n".join(head) + "\n" + "c = 'xyz'\n" * 50, encoding="utf-8")
    lines = DocumentIndex(UTF16, UTF32).lines_of(path.as_uri())
    assert lines is not None and list(lines[:2]) == head
    # Every line kept is whole; none past the cap.
    assert set(lines[2:]) == {"c = 'xyz'"}
    assert len("\n".join(lines).encode()) <= 100


def test_oversized_file_with_no_line_end_in_the_cap_needs_no_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "MAX_FILE_BYTES", 100)
    path = tmp_path / "one_line.py"
    path.write_text("x = '😋'" * 100, encoding="utf-8")
    assert DocumentIndex(UTF16, UTF32).lines_of(path.as_uri()) is None


def test_read_is_capped_in_memory(tmp_path):
    path = tmp_path / "big.py"
    path.write_bytes(("z = '😋'\n" * 1_000_000).encode())  # ~12 MB
    read = documents.read_disk_lines(str(path), UTF16, UTF32)
    assert read is not None and read.lines is not None
    assert len(read.lines) < documents.MAX_FILE_BYTES // 10
    # Short lines of astral text cost ~10x their bytes as str objects: such a
    # file is converted with, then freed, never cached.
    index = DocumentIndex(UTF16, UTF32)
    assert index.lines_of(path.as_uri()) == read.lines
    assert read.cost > documents.DISK_CACHE_BYTES // 4
    assert index._disk_bytes == 0 and not index._disk


async def test_load_reads_off_the_loop_then_lines_of_uses_the_cache(tmp_path, monkeypatch):
    path = tmp_path / "lib.py"
    path.write_text("a = '😋'\n", encoding="utf-8")
    uri = path.as_uri()
    index = DocumentIndex(UTF16, UTF32)
    index.update(URI, ASTRAL)
    assert index.unloaded([uri, URI, "untitled:x", "file:///nowhere.py"]) == [uri]
    loop_thread = threading.get_ident()
    seen: list[int] = []
    real = documents.read_disk_lines

    def spy(*args):
        seen.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(documents, "read_disk_lines", spy)
    await index.load([uri])
    assert seen and loop_thread not in seen
    assert index.unloaded([uri]) == []
    seen.clear()
    assert index.lines_of(uri) == ["a = '😋'", ""]
    assert seen == []  # served from the cache


async def test_load_returns_lines_too_large_to_cache(tmp_path, monkeypatch):
    path = tmp_path / "wide.py"
    path.write_text("a = '😋'\n" * 1000, encoding="utf-8")
    monkeypatch.setattr(documents, "DISK_CACHE_BYTES", 1000)
    index = DocumentIndex(UTF16, UTF32)
    loaded = await index.load([path.as_uri(), "file:///dev/zero"])
    assert loaded[path.as_uri()][999] == "a = '😋'"
    assert loaded["file:///dev/zero"] is None
    assert not index._disk  # used for this conversion, not kept
