"""``gnnbench datasets fetch NAME``: download a dataset's raw files, check them, extract them into the data root.

Note [fetch]
    Each URL of the dataset's :class:`~.sources.Source` is downloaded to
    ``<data root>/.downloads/<file>.part`` with a progress bar (tqdm). An
    interrupted download resumes with an HTTP ``Range`` request; a server that
    ignores it sends the whole file again, which then replaces the part. The
    finished file is checked against the publisher's sha256 where one is
    published, else against the sum recorded by the first download
    (Note [published checksums]). Archives are extracted into a temp folder
    (members that would land outside it, and symbolic links, are refused),
    moved into place under the folder the loader looks in, and the archive is
    deleted. Without a network the first connection fails within ``timeout``
    seconds and the error says where to put the files by hand.

Note [fetch writes only its own files]
    Fetch writes nothing outside the data root and keeps a good dataset until
    its replacement is complete: a ``.part`` that is a symbolic link is refused
    (writing it would write over the link's target), as is a target folder that
    is one (replacing it would delete another folder's files); an archive is
    extracted and checked to hold every raw file first, and only then does the
    old folder move aside, the new one take its place, and the old one go.
    ``CHECKSUMS.json`` is written whole beside itself and renamed into place.
    Every folder and file fetch creates or replaces below the data root
    (``.downloads``, a ``.part``, ``CHECKSUMS.json``) goes through
    :mod:`gnnbench.safe_write`, which refuses a symbolic link on any of them
    (Note [writes refuse links]).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnnbench.errors import UserError
from gnnbench.safe_write import check_no_links, make_folder, open_append, write_file

from .sources import SOURCES, Source, data_root, file_sha256, find_raw_folder, missing_files_message

__all__ = ["fetch", "Fetched", "CHECKSUMS"]

#: Sums recorded by first downloads, in the data root (Note [published checksums]).
CHECKSUMS = "CHECKSUMS.json"
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Fetched:
    """The outcome of :func:`fetch`: where the files are and the sha256 of each download."""

    name: str
    folder: Path
    downloads: dict[str, str]


def _checksums(root: Path) -> dict[str, str]:
    try:
        with open(root / CHECKSUMS, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_checksums(root: Path, recorded: dict[str, str]) -> None:
    """Writes the checksums whole, then renames them into place: a crash leaves the old file, and a symbolic
    link at ``CHECKSUMS.json`` is replaced, never written through (Note [fetch writes only its own files])."""
    write_file(root / CHECKSUMS, json.dumps(recorded, indent=1, sort_keys=True), root)


def _download(url: str, part: Path, timeout: float, progress: bool, source: Source, root: Path) -> None:
    """``url`` into ``part``, resuming from its current size (Note [fetch])."""
    from tqdm import tqdm

    check_no_links(part, root)  # the .part and .downloads (Note [writes refuse links])
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "gnnbench"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # the part is already complete
            return
        raise UserError(f"could not download {url} (HTTP {err.code} {err.reason}); "
                        f"{missing_files_message(source, root)}") from None
    except (urllib.error.URLError, OSError, socket.timeout) as err:
        reason = getattr(err, "reason", err)
        raise UserError(f"could not reach {url} ({reason}); without a network, "
                        f"{missing_files_message(source, root)}") from None
    with response:
        resumed = offset and response.status == 206
        length = response.headers.get("Content-Length")
        total = (int(length) + (offset if resumed else 0)) if length and length.isdigit() else None
        with open_append(part, root, append=bool(resumed)) as out, \
                tqdm(total=total, initial=offset if resumed else 0, unit="B", unit_scale=True,
                     desc=Path(url).name, disable=not progress, leave=False) as bar:
            try:
                for block in iter(lambda: response.read(_BLOCK), b""):
                    out.write(block)
                    bar.update(len(block))
            except (OSError, socket.timeout) as err:
                raise UserError(f"download of {url} broke off ({err}); run the same command again to resume "
                                f"from {part}") from None
    if total is not None and part.stat().st_size != total:
        raise UserError(f"download of {url} ended early ({part.stat().st_size} of {total} bytes); run the same "
                        f"command again to resume")


def _safe_extract(archive: Path, into: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                target = (into / info.filename).resolve()
                if not target.is_relative_to(into.resolve()):
                    raise UserError(f"{archive}: member {info.filename!r} would be written outside {into}; "
                                    f"refusing the archive")
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise UserError(f"{archive}: member {info.filename.rstrip('/')!r} is a symbolic link; refusing "
                                    f"the archive")
            z.extractall(into)
    except zipfile.BadZipFile as err:
        raise UserError(f"{archive}: not a readable zip archive ({err}); delete it and fetch again") from None
    except OSError as err:  # e.g. a member that is both a file and a folder
        raise UserError(f"{archive}: could not extract ({err.strerror}: {err.filename}); refusing the "
                        f"archive") from None


def _holds_files(content: Path, source: Source) -> bool:
    """Whether ``content``, once at ``root/<archive_folder>``, is a folder the loader finds complete."""
    for folder in source.folders:
        if folder == source.archive_folder or folder.startswith(source.archive_folder + "/"):
            inner = content / folder[len(source.archive_folder):].lstrip("/")
            if all((inner / f).is_file() for f in source.files):
                return True
    return False


def _replace_folder(content: Path, target: Path, scratch: Path) -> None:
    """``content`` becomes ``target``; an old ``target`` moves into ``scratch`` first, to be deleted with it."""
    if target.exists():
        os.replace(target, scratch / ".old")
    os.replace(content, target)


def _install(downloaded: Path, source: Source, root: Path) -> None:
    """Put a finished download where the loader looks (``root/<archive_folder>``)."""
    target = root / source.archive_folder
    if target.is_symlink():
        raise UserError(f"{target} is a symbolic link to {target.resolve()}; fetch replaces the folder, so remove the "
                        f"link or pass --data-dir (Note [fetch writes only its own files])")
    if downloaded.suffix != ".zip":
        make_folder(target, root)
        check_no_links(target / downloaded.name, root)
        os.replace(downloaded, target / downloaded.name)
        return
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".extract-{source.archive_folder}."))
    try:
        extracted = tmp / "archive"
        _safe_extract(downloaded, extracted)
        if not extracted.is_dir():  # an archive of no members extracts nothing, not even its folder
            raise UserError(f"{downloaded.name} is an empty archive: it holds no {', '.join(source.files)}; kept the "
                            f"files in {target} (Note [fetch writes only its own files])")
        entries = [p for p in extracted.iterdir() if not p.name.startswith(("__MACOSX", "."))]
        content = entries[0] if len(entries) == 1 and entries[0].is_dir() else extracted
        if not _holds_files(content, source):
            raise UserError(f"{downloaded.name} holds no {', '.join(source.files)}; kept the files in {target} "
                            f"(Note [fetch writes only its own files])")
        _replace_folder(content, target, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    downloaded.unlink()


def fetch(name: str, data_dir: str | os.PathLike | None = None, url: str | None = None,
          timeout: float = 10.0, progress: bool = True) -> Fetched:
    """Download, check and extract dataset ``name`` (Note [fetch]).

    Args:
        name: a real dataset, e.g. ``"ogbn-arxiv"`` (see ``gnnbench datasets``).
        data_dir: the data root to extract into. (default: ``$GNNBENCH_DATA_DIR``,
            else ``<cache>/data``)
        url: a mirror to use instead of the publisher's URL (one file).
        timeout: seconds to wait for a connection or a read. (default: 10)
        progress: show a progress bar. (default: True)

    Raises:
        UserError: unknown name, no network, a checksum mismatch or a bad archive.
    """
    source = SOURCES.get(name.strip().lower())
    if source is None:
        raise UserError(f"'{name}' cannot be fetched; choose one of: {', '.join(SOURCES)} (synthetic datasets "
                        f"are generated on first use)")
    root, _ = data_root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    check_no_links(root / CHECKSUMS, root)  # refused before anything is downloaded, not after
    downloads = make_folder(root / ".downloads", root)  # a link there is refused (Note [writes refuse links])
    recorded = _checksums(root)
    sums: dict[str, str] = {}
    for link in ([url] if url else source.urls):
        part = downloads / (Path(link.split("?")[0]).name + ".part")
        _download(link, part, timeout, progress, source, root)
        digest = file_sha256(part)
        expected = source.sha256 if not url and len(source.urls) == 1 else None
        expected = expected or recorded.get(link)
        if expected is not None and digest != expected:
            part.unlink()
            raise UserError(f"{link}: downloaded file has sha256 {digest[:16]}..., expected {expected[:16]}...; it "
                            f"was deleted, fetch again (or check the mirror)")
        recorded[link] = sums[link] = digest
        done = check_no_links(part.with_name(part.name[:-len(".part")]), root)
        os.replace(part, done)
        _install(done, source, root)
    _write_checksums(root, recorded)
    return Fetched(source.name, find_raw_folder(source, root), sums)


def describe_local(name: str, data_dir: Any = None) -> tuple[bool, str]:
    """Whether ``name``'s raw files are present, and where they are (or are expected)."""
    source = SOURCES[name]
    root, _ = data_root(data_dir)
    try:
        return True, str(find_raw_folder(source, data_dir))
    except UserError:
        return False, str(root / source.folders[0])
