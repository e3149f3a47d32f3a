"""``gnnbench datasets fetch`` against a local HTTP server on 127.0.0.1 (datasets/fetch.py); never the internet."""
from __future__ import annotations

import http.server
import io
import threading
import time
import zipfile
from pathlib import Path

import pytest

from gnnbench.cli import main
from gnnbench.datasets import load_dataset
from gnnbench.datasets.fetch import fetch
from gnnbench.errors import UserError

from . import publishers


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.payload`` at any path, honouring ``Range: bytes=N-`` (as the publishers' servers do)."""

    def do_GET(self):  # noqa: N802 -- http.server's naming
        payload = self.server.payload
        self.server.ranges.append(self.headers.get("Range"))
        start = 0
        if self.headers.get("Range", "").startswith("bytes="):
            start = int(self.headers["Range"][6:].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(payload) - 1}/{len(payload)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(payload) - start))
        self.end_headers()
        self.wfile.write(payload[start:])

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    httpd.payload, httpd.ranges = b"", []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _reddit_zip(tmp_path: Path) -> bytes:
    """DGL's reddit.zip layout: the two npz files at the archive's top level."""
    publishers.write_reddit(tmp_path / "src")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in ("reddit_data.npz", "reddit_graph.npz"):
            z.write(tmp_path / "src" / "reddit" / f, f)
    return buf.getvalue()


def test_fetch_extracts_where_the_loader_looks(tmp_path, server, capsys):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/dataset/reddit.zip"
    root = tmp_path / "data"
    assert main(["datasets", "fetch", "reddit", "--url", url, "--data-dir", str(root), "--no-progress"]) == 0
    assert f"reddit: files in {root / 'reddit'}" in capsys.readouterr().out
    assert sorted(p.name for p in (root / "reddit").iterdir()) == ["reddit_data.npz", "reddit_graph.npz"]
    assert not any((root / ".downloads").iterdir()), "the archive is removed after extraction"
    assert load_dataset("reddit", data_dir=root).num_nodes == 300
    assert (root / "CHECKSUMS.json").read_text().count(url) == 1


def test_fetch_resumes_a_partial_download(tmp_path, server):
    payload = server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root = tmp_path / "data"
    (root / ".downloads").mkdir(parents=True)
    (root / ".downloads" / "reddit.zip.part").write_bytes(payload[:1000])
    fetch("reddit", data_dir=root, url=url, progress=False)
    assert server.ranges == ["bytes=1000-"]
    assert (root / "reddit" / "reddit_graph.npz").is_file()


def test_a_changed_download_is_refused(tmp_path, server):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root = tmp_path / "data"
    fetch("reddit", data_dir=root, url=url, progress=False)
    server.payload = server.payload[:-1] + b"x"
    with pytest.raises(UserError, match=r"reddit\.zip: downloaded file has sha256 .* expected .*; it was deleted"):
        fetch("reddit", data_dir=root, url=url, progress=False)


def test_a_bad_archive_is_one_line(tmp_path, server):
    server.payload = b"this is not a zip"
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    with pytest.raises(UserError, match=r"reddit\.zip: not a readable zip archive"):
        fetch("reddit", data_dir=tmp_path, url=url, progress=False)


@pytest.mark.serial  # it times the refusal (Note [parallel tests])
def test_without_network_fails_fast_saying_where_to_put_files(tmp_path, capsys):
    closed = http.server.HTTPServer(("127.0.0.1", 0), _RangeHandler)
    port = closed.server_port
    closed.server_close()  # nothing listens there now
    start = time.monotonic()
    assert main(["datasets", "fetch", "ogbn-arxiv", "--url", f"http://127.0.0.1:{port}/arxiv.zip",
                 "--data-dir", str(tmp_path), "--timeout", "2"]) == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(f"gnnbench datasets: could not reach http://127.0.0.1:{port}/arxiv.zip (")
    assert err.endswith(f"put raw/edge.csv.gz ... (8 files) from http://snap.stanford.edu/ogb/data/nodeproppred/"
                        f"arxiv.zip (extracted) in {tmp_path / 'ogbn_arxiv'} and pass --data-dir {tmp_path}")


def test_fetch_refuses_synthetic_names():
    with pytest.raises(UserError, match="'rmat' cannot be fetched; choose one of: cora, citeseer, pubmed"):
        fetch("rmat")


def _zip(entries: list[tuple[str, bytes, int]]) -> bytes:
    """An archive of ``(name, content, unix mode)`` members; mode 0o120777 makes a symbolic link."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, content, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            z.writestr(info, content)
    return buf.getvalue()


def test_a_symlinked_directory_member_is_one_line(tmp_path, server):
    server.payload = _zip([("reddit", b"/etc", 0o120777), ("reddit/reddit_data.npz", b"x", 0o100644)])
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    with pytest.raises(UserError, match=r"reddit\.zip: member 'reddit' is a symbolic link; refusing the archive"):
        fetch("reddit", data_dir=tmp_path / "data", url=url, progress=False)


def test_a_symlinked_target_folder_is_refused_and_left_alone(tmp_path, server):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("mine")
    root.mkdir()
    (root / "reddit").symlink_to(elsewhere)
    with pytest.raises(UserError, match=rf"{root / 'reddit'} is a symbolic link to {elsewhere}; fetch replaces "
                                        r"the folder, so remove the link or pass --data-dir"):
        fetch("reddit", data_dir=root, url=url, progress=False)
    assert (elsewhere / "keep").read_text() == "mine"


def test_a_symlinked_part_file_is_not_followed(tmp_path, server):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root, victim = tmp_path / "data", tmp_path / "victim"
    victim.write_text("precious")
    (root / ".downloads").mkdir(parents=True)
    (root / ".downloads" / "reddit.zip.part").symlink_to(victim)
    with pytest.raises(UserError, match=r"reddit\.zip\.part is a symbolic link \(to .*victim\); remove it and try "
                                        r"again: gnnbench writes only its own files, never through a link"):
        fetch("reddit", data_dir=root, url=url, progress=False)
    assert victim.read_text() == "precious"


def test_a_symlinked_checksums_file_is_refused_before_anything_is_downloaded(tmp_path, server):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root, victim = tmp_path / "data", tmp_path / "victim"
    victim.write_text("precious")
    root.mkdir()
    (root / "CHECKSUMS.json").symlink_to(victim)
    with pytest.raises(UserError) as err:
        fetch("reddit", data_dir=root, url=url, progress=False)
    assert str(err.value) == (f"{root / 'CHECKSUMS.json'} is a symbolic link (to {victim}); remove it and try "
                              f"again: gnnbench writes only its own files, never through a link (Note [writes "
                              f"refuse links])")
    assert victim.read_text() == "precious" and sorted(p.name for p in root.iterdir()) == ["CHECKSUMS.json"]


def test_a_symlinked_downloads_folder_is_refused_and_what_it_links_to_is_kept(tmp_path, server):
    """The probe's finding: a .downloads linking to the dataset's folder had a file there overwritten, then
    deleted."""
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "reddit.zip").write_text("mine")
    root.mkdir()
    (root / ".downloads").symlink_to(elsewhere)
    with pytest.raises(UserError) as err:
        fetch("reddit", data_dir=root, url=url, progress=False)
    assert str(err.value) == (f"{root / '.downloads'} is a symbolic link (to {elsewhere}); remove it and try "
                              f"again: gnnbench writes only its own files, never through a link (Note [writes "
                              f"refuse links])")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["reddit.zip"]
    assert (elsewhere / "reddit.zip").read_text() == "mine"


def test_an_empty_archive_is_one_line_and_keeps_the_dataset(tmp_path, server):
    buf = io.BytesIO()
    zipfile.ZipFile(buf, "w").close()
    server.payload = buf.getvalue()
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root = tmp_path / "data"
    with pytest.raises(UserError) as err:
        fetch("reddit", data_dir=root, url=url, progress=False)
    from gnnbench.datasets.sources import SOURCES

    assert str(err.value) == (f"reddit.zip is an empty archive: it holds no {', '.join(SOURCES['reddit'].files)}; "
                              f"kept the files in {root / 'reddit'} (Note [fetch writes only its own files])")
    assert not (root / "reddit").exists()


def test_a_refetch_lacking_the_files_keeps_the_good_dataset(tmp_path, server):
    server.payload = _reddit_zip(tmp_path)
    url = f"http://127.0.0.1:{server.server_port}/reddit.zip"
    root = tmp_path / "data"
    fetch("reddit", data_dir=root, url=url, progress=False)
    before = {p.name: p.read_bytes() for p in (root / "reddit").iterdir()}
    server.payload = _zip([("README", b"nothing here", 0o100644)])
    with pytest.raises(UserError, match=r"reddit\.zip holds no reddit_data\.npz, reddit_graph\.npz; kept the "
                                        rf"files in {root / 'reddit'}"):
        fetch("reddit", data_dir=root, url=f"{url}?again", progress=False)
    assert {p.name: p.read_bytes() for p in (root / "reddit").iterdir()} == before
    assert [p.name for p in root.iterdir() if p.name.startswith(".extract")] == []
