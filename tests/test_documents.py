"""Unit tests for DocumentIndex (open documents and files read from disk)."""

from __future__ import annotations

import os

import pytest

from steerlsp.server import documents
from steerlsp.server.documents import DocumentIndex, split_lines
from steerlsp.server.positions import UTF8, UTF16, UTF32

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


def test_disk_cache_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "_DISK_CACHE_SIZE", 3)
    index = DocumentIndex(UTF16, UTF32)
    for i in range(6):
        path = tmp_path / f"m{i}.py"
        path.write_text(f"v{i} = '😋'\n", encoding="utf-8")
        assert index.lines_of(path.as_uri()) == [f"v{i} = '😋'", ""]
    assert len(index._disk) == 3
    assert list(index._disk) == [str(tmp_path / f"m{i}.py") for i in (3, 4, 5)]
