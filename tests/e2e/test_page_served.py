"""The page on the real server (page, guards, browser ids): compressed for a browser that accepts it, the same page for
every fresh visitor while each still gets a browser id of its own, and the queue's event stream still answers."""

from __future__ import annotations

import gzip
import http.client
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from gradio_client import Client

from testkit.models import tiny_settings
from testkit.server import launched_app


@pytest.fixture(scope="module")
def url(tiny_champion_home: Path) -> Iterator[str]:
    with launched_app(tiny_settings(tiny_champion_home)) as (served, _):
        yield served


def fetch(url: str, path: str, encoding: str) -> tuple[http.client.HTTPResponse, bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": encoding, "Accept": "text/html"})
        response = conn.getresponse()
        return response, response.read()  # as sent: http.client never decompresses
    finally:
        conn.close()


def test_the_page_is_compressed_for_a_browser_that_accepts_it(url: str) -> None:
    plain_response, plain = fetch(url, "/", "identity")
    packed_response, packed = fetch(url, "/", "gzip, deflate, br")
    assert plain_response.status == packed_response.status == 200
    assert plain_response.getheader("content-encoding") is None and b"gradio_config" in plain
    assert packed_response.getheader("content-encoding") == "gzip"
    assert gzip.decompress(packed) == plain and len(packed) * 3 < len(plain)


def test_every_fresh_visitor_gets_the_same_page_and_a_browser_id_of_its_own(url: str) -> None:
    visits = [fetch(url, "/", "gzip") for _ in range(3)]
    assert len({body for _, body in visits}) == 1
    cookies = [response.getheader("set-cookie") for response, _ in visits]
    assert all(cookies) and len(set(cookies)) == 3


def test_events_still_answer_through_the_compressed_server(url: str) -> None:
    label, _info, _shown = Client(url, verbose=False).predict("The striker scored twice in the final.",
                                                             api_name="/classify")
    assert set(label) >= {"label", "confidences"}


def test_the_page_weight_bench_counts_the_bytes_as_sent(url: str) -> None:
    from bench.page_weight import load_once

    _, plain = fetch(url, "/", "identity")
    load = load_once(url)
    assert 0 < load.bytes < len(plain) / 3 and load.seconds > 0
