"""A loopback TCP proxy in front of a server that can stop forwarding: it goes on accepting connections and
taking their bytes (the kernel acknowledges them, so no TCP timeout fires) and passes nothing on, as a
path that black-holes packets or a frozen middlebox does."""

from __future__ import annotations

import contextlib
import socket
import threading


class StallingProxy:
    """127.0.0.1:`port` -> 127.0.0.1:`target`; `stall()` stops forwarding on every connection, old and new."""

    def __init__(self, target: int, *, stalled: bool = False) -> None:
        self.target = target
        self.stalled = threading.Event()
        if stalled:
            self.stalled.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = [self.listener]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """`url` (of the server at `target`) through the proxy."""
        return url.replace(f"127.0.0.1:{self.target}", f"127.0.0.1:{self.port}")

    def stall(self) -> None:
        self.stalled.set()

    def close(self) -> None:
        with self.lock:
            for held in self.sockets:
                with contextlib.suppress(OSError):
                    held.close()

    def __enter__(self) -> StallingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _keep(self, held: socket.socket) -> None:
        with self.lock:
            self.sockets.append(held)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            self._keep(client)
            if self.stalled.is_set():
                continue  # held open, never read: the handshake waits for an answer that never comes
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._keep(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data or self.stalled.is_set():
                return  # stalled: what came is dropped, and the connection stays open with nothing read
            try:
                sink.sendall(data)
            except OSError:
                return
