"""Release downloads against a real HTTP server on loopback: caching, verification, dead servers, stale tags."""

import functools
import http.server
import json
import shutil
import socket
import threading
import time

import pytest

from compileiq.errors import ConfigurationError
from compileiq.search_spaces.compilers import PtxasSearchSpace
from compileiq.search_spaces.errors import (SearchSpaceWarning, SpaceDownloadError, SpaceIntegrityError,
                                            SpaceNotFoundError)
from compileiq.search_spaces.manifest import write_manifest
from compileiq.search_spaces.resolver import shipped_dir

TAG = "test-spaces-1"


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_GET(self):
        short = self.server.truncate.get(self.path)
        if short is None:
            return super().do_GET()
        data = short[0]
        self.send_response(200)
        self.send_header("Content-Length", str(short[1]))  # promise more than is sent
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True


class Release:
    """A release location on 127.0.0.1 serving ``root``: latest.json, <tag>/manifest.json, <tag>/<files>."""

    def __init__(self, root):
        self.root = root
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
        self.server.truncate = {}
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self):
        if self.thread is not None:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join()
            self.thread = None


def make_release(root, tag=TAG, compilers=("ptxas",)):
    folder = root / tag
    folder.mkdir(parents=True)
    for f in shipped_dir().glob("*.json"):
        if f.name != "manifest.json" and f.name.split("-")[0] in compilers:
            shutil.copy(f, folder / f.name)
    write_manifest(folder, tag)
    (root / "latest.json").write_text(json.dumps({"tag": tag}))
    return folder


@pytest.fixture
def release(tmp_path, monkeypatch):
    make_release(tmp_path / "www")
    rel = Release(tmp_path / "www")
    monkeypatch.setenv("CIQ_SEARCH_SPACES_URL", rel.url)
    monkeypatch.setenv("CIQ_DOWNLOAD_TIMEOUT", "5")
    yield rel
    rel.stop()


def cache(tmp_path):
    return tmp_path / "xdg-cache" / "compileiq"


def test_download_verifies_caches_and_then_works_without_the_server(release, tmp_path):
    p = PtxasSearchSpace(version="13.5", check_compiler=False)
    path = p.retrieve()
    meta = p.resolution_metadata
    assert meta["source"] == "download" and meta["requested_tag"] == "latest" and meta["resolved_tag"] == TAG
    assert meta["filename"] == "ptxas-13.5-default.json" and meta["size_bytes"] > 0 and len(meta["sha256"]) == 64
    assert path == str(cache(tmp_path) / TAG / f"{meta['sha256'][:12]}_ptxas-13.5-default.json") == meta["path"]
    assert (cache(tmp_path) / TAG / "manifest.json").is_file()
    assert not list(cache(tmp_path).rglob("*.part"))
    release.stop()  # the latest tag, the manifest and the file are all cached now
    again = PtxasSearchSpace(version="13.5", check_compiler=False)
    assert again.retrieve() == path and again.resolution_metadata["source"] == "cache"
    assert len(again.to_component().genes) > 0


def test_an_explicit_tag_is_downloaded_without_resolving_latest(release, tmp_path):
    make_release(release.root, "older-tag")
    (release.root / "latest.json").unlink()
    p = PtxasSearchSpace(version="13.0", tag="older-tag", check_compiler=False)
    p.retrieve()
    assert p.resolution_metadata["resolved_tag"] == "older-tag" and p.resolution_metadata["source"] == "download"


def test_a_truncated_transfer_is_refused_and_nothing_is_cached(release, tmp_path):
    f = release.root / TAG / "ptxas-13.5-default.json"
    data = f.read_bytes()
    release.server.truncate[f"/{TAG}/{f.name}"] = (data[:100], len(data))
    with pytest.raises(SpaceIntegrityError, match=r"truncated"):
        PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    assert not list((cache(tmp_path) / TAG).glob("*ptxas-13.5*"))


def test_a_short_file_fails_the_size_check_before_the_checksum(release, tmp_path):
    f = release.root / TAG / "ptxas-13.5-default.json"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(SpaceIntegrityError, match=r"bytes where the manifest says .* \(truncated\)"):
        PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    assert not list((cache(tmp_path) / TAG).glob("*ptxas-13.5*"))


def test_a_wrong_checksum_is_refused_and_nothing_is_cached(release, tmp_path):
    f = release.root / TAG / "ptxas-13.5-default.json"
    f.write_bytes(f.read_bytes().replace(b'"default"', b'"Default"'))  # same size, other bytes
    with pytest.raises(SpaceIntegrityError, match="does not match the manifest's"):
        PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    assert not list((cache(tmp_path) / TAG).glob("*ptxas-13.5*")) and not list(cache(tmp_path).rglob("*.part"))


def test_a_damaged_cached_copy_is_a_cache_miss(release, tmp_path):
    p = PtxasSearchSpace(version="13.5", check_compiler=False)
    path = p.retrieve()
    with open(path, "ab") as fh:
        fh.write(b" ")
    p.retrieve()
    assert p.resolution_metadata["source"] == "download"


def test_a_manifest_without_the_version_lists_what_exists(release):
    with pytest.raises(SpaceNotFoundError) as info:
        PtxasSearchSpace(version="13.4", check_compiler=False).retrieve()
    assert "versions there: 13.0, 13.3, 13.5" in str(info.value) and f"tag {TAG}" in str(info.value)
    assert "ptxas 13.5 (default)" in info.value.available


def test_a_missing_tag_is_an_http_error_with_the_fix(release):
    with pytest.raises(SpaceDownloadError, match=r"HTTP 404.*check CIQ_SEARCH_SPACES_URL and the tag"):
        PtxasSearchSpace(version="13.5", tag="no-such-tag", check_compiler=False).retrieve()


def test_connection_refused_names_the_url_and_the_offline_options(monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("CIQ_SEARCH_SPACES_URL", f"http://127.0.0.1:{port}")
    with pytest.raises(SpaceDownloadError, match=r"cannot connect .*CIQ_SEARCH_SPACES_DIR"):
        PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()


def test_a_server_that_never_answers_times_out_after_CIQ_DOWNLOAD_TIMEOUT(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # the kernel completes connections; nobody ever reads or answers
        monkeypatch.setenv("CIQ_SEARCH_SPACES_URL", f"http://127.0.0.1:{s.getsockname()[1]}")
        monkeypatch.setenv("CIQ_DOWNLOAD_TIMEOUT", "0.5")
        t0 = time.monotonic()
        with pytest.raises(SpaceDownloadError, match=r"no answer within 0.5 s \(CIQ_DOWNLOAD_TIMEOUT\)"):
            PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
        assert time.monotonic() - t0 < 5


def _age_latest_record(tmp_path, days):
    (record,) = (cache(tmp_path) / "latest-tags").glob("*.json")
    doc = json.loads(record.read_text())
    doc["resolved_at"] -= days * 86400
    record.write_text(json.dumps(doc))


def test_a_fresh_latest_tag_is_reused_without_asking_the_server(release, tmp_path):
    PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    (release.root / "latest.json").write_text(json.dumps({"tag": "newer"}))
    p = PtxasSearchSpace(version="13.5", check_compiler=False)
    p.retrieve()
    assert p.resolution_metadata["resolved_tag"] == TAG  # within CIQ_SS_LATEST_TTL_DAYS (7)


def test_a_stale_latest_tag_is_used_with_a_warning_when_the_server_fails(release, tmp_path, monkeypatch):
    PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    _age_latest_record(tmp_path, 30)
    release.stop()
    p = PtxasSearchSpace(version="13.5", check_compiler=False)
    with pytest.warns(SearchSpaceWarning, match=rf"using {TAG}, resolved 30.0 days ago"):
        p.retrieve()
    assert p.resolution_metadata["source"] == "cache"


def test_ttl_zero_asks_the_server_every_time(release, tmp_path, monkeypatch):
    monkeypatch.setenv("CIQ_SS_LATEST_TTL_DAYS", "0")
    PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
    make_release(release.root, "newer")
    p = PtxasSearchSpace(version="13.5", check_compiler=False)
    p.retrieve()
    assert p.resolution_metadata["resolved_tag"] == "newer"


def test_the_offline_mirror_comes_first_and_is_verified(release, tmp_path, monkeypatch):
    mirror = release.root / TAG
    release.stop()  # a mirror never touches the network
    monkeypatch.setenv("CIQ_SEARCH_SPACES_DIR", str(mirror))
    p = PtxasSearchSpace(version="13.3", check_compiler=False)
    assert p.retrieve() == str(mirror / "ptxas-13.3-default.json")
    assert p.resolution_metadata["source"] == "CIQ_SEARCH_SPACES_DIR" and p.resolution_metadata["resolved_tag"] == TAG
    with pytest.raises(SpaceNotFoundError, match=rf"holds tag {TAG}, not the requested tag other"):
        PtxasSearchSpace(version="13.3", tag="other", check_compiler=False).retrieve()
    f = mirror / "ptxas-13.3-default.json"
    f.write_bytes(f.read_bytes() + b"\n")
    with pytest.raises(SpaceIntegrityError, match="too long"):
        PtxasSearchSpace(version="13.3", check_compiler=False).retrieve()
    (mirror / "manifest.json").unlink()
    with pytest.raises(ConfigurationError, match="has no manifest.json"):
        PtxasSearchSpace(version="13.3", check_compiler=False).retrieve()


def test_another_tag_without_a_release_location_says_how_to_get_it(monkeypatch):
    monkeypatch.delenv("CIQ_SEARCH_SPACES_URL", raising=False)
    with pytest.raises(SpaceNotFoundError, match=r"not the shipped tag .* set CIQ_SEARCH_SPACES_URL"):
        PtxasSearchSpace(version="13.5", tag="some-other-tag", check_compiler=False).retrieve()


@pytest.mark.parametrize("var, value, needle", [
    ("CIQ_SEARCH_SPACES_URL", "ftp://example.org/spaces", "not an http(s) URL"),
    ("CIQ_DOWNLOAD_TIMEOUT", "soon", "CIQ_DOWNLOAD_TIMEOUT='soon' is not a finite number"),
    ("CIQ_SS_LATEST_TTL_DAYS", "-1", "CIQ_SS_LATEST_TTL_DAYS='-1' is not a finite number >= 0"),
    ("CIQ_SEARCH_SPACES_DIR", "/no/such/folder", "is not a folder"),
])
def test_bad_settings_are_refused_with_the_variable_named(monkeypatch, var, value, needle):
    monkeypatch.setenv("CIQ_SEARCH_SPACES_URL", "http://127.0.0.1:9")
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigurationError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        PtxasSearchSpace(version="13.5", check_compiler=False).retrieve()
