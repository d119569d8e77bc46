"""What the operator lets clients name: files under chosen directories, URLs of chosen hosts.

By default a client can name no file and no URL at all (``Allowances()``). ``mrlm-envs serve
--allow-records-dir DIR`` lets clients name regular files under ``DIR`` (records, documents) and
``--allow-url-host HOST`` URLs of ``HOST``.

A path is first checked as text: one outside every allowed directory is refused before anything
touches the disk, with the same message whether it exists or not, so that refusals reveal nothing of
the server's files. Only a path inside an allowed directory is resolved (symlinks followed, then
checked again, so that a link cannot lead out) and must name a regular file: a FIFO or a device
would pin or flood the thread that reads it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["Allowances", "ArgumentRefused"]


class ArgumentRefused(ValueError):
    """A value a client may not give; the message says what is allowed instead."""


@dataclass(frozen=True)
class Allowances:
    """The directories and hosts a server's clients may name.

    Attributes:
        records_dirs: absolute, resolved directories; relative client paths are taken from the first.
        url_hosts: host names (lower case) that URLs may point to.
    """

    records_dirs: tuple[str, ...] = ()
    url_hosts: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, records_dirs: Iterable[str] = (), url_hosts: Iterable[str] = ()) -> Allowances:
        """Allowances from the operator's flags; every directory must exist.

        Raises:
            ValueError: a directory that does not exist or is not a directory.
        """
        resolved = []
        for directory in records_dirs:
            real = os.path.realpath(directory)
            if not os.path.isdir(real):
                raise ValueError(f"--allow-records-dir {directory!r} is not a directory")
            resolved.append(real)
        hosts = frozenset(host.strip().lower() for host in url_hosts if host.strip())
        return cls(tuple(resolved), hosts)

    def file(self, text: str) -> str:
        """The resolved path of the regular file ``text`` names, if it lies in an allowed directory.

        Raises:
            ArgumentRefused: no directory is allowed, the path is outside them, or it names no
                regular file.
        """
        if not self.records_dirs:
            raise ArgumentRefused(
                "is a file path, and this server accepts none from clients "
                "(the operator can allow a directory with --allow-records-dir)"
            )
        outside = ArgumentRefused(
            f"is a path outside the directories this server allows clients to name ({', '.join(self.records_dirs)})"
        )
        if not text or "\x00" in text or "://" in text:
            raise outside
        # Lexical first: a path outside the allowed directories never reaches the file system.
        candidate = os.path.normpath(os.path.join(self.records_dirs[0], text))
        if not self._inside(candidate):
            raise outside
        real = os.path.realpath(candidate)
        if not self._inside(real):
            raise outside
        try:
            mode = os.stat(real).st_mode
        except OSError:
            raise ArgumentRefused(f"names no readable file under {', '.join(self.records_dirs)}") from None
        if not stat.S_ISREG(mode):
            raise ArgumentRefused(
                "names something that is not a regular file (a FIFO, a device, a directory)"
            )
        return real

    def url(self, text: str) -> str:
        """``text`` if it is an http(s) URL of an allowed host.

        Raises:
            ArgumentRefused: any other string.
        """
        try:
            parts = urlsplit(text)
            host = (parts.hostname or "").lower()
        except ValueError:
            parts, host = None, ""
        if parts is None or parts.scheme not in ("http", "https") or not host:
            raise ArgumentRefused("must be an http:// or https:// URL")
        if host not in self.url_hosts:
            allowed = ", ".join(sorted(self.url_hosts)) or "none (see --allow-url-host)"
            raise ArgumentRefused(
                f"points to host {host!r}, which this server does not allow; allowed: {allowed}"
            )
        return text

    def _inside(self, path: str) -> bool:
        return any(os.path.commonpath([path, directory]) == directory for directory in self.records_dirs)
