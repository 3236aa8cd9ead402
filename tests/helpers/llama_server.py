"""A real inference server for the remote backend's tests: llama-cpp-python's
``llama_cpp.server`` serving the embedded GGUF on 127.0.0.1, started, killed and
restarted on the same port as a team's server would be; or, for the benchmarks,
llama.cpp's own ``llama-server`` (``binary``), with several slots."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from steerlsp.models.loading.load import embedded_gguf

MODEL = "gemma-3-270m"  # the alias it serves the model under


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One ``llama_cpp.server`` process (``start``, ``kill``, ``start`` again)."""

    def __init__(
        self,
        port: int | None = None,
        api_key: str = "",
        verbose: bool = False,
        binary: str = "",
        slots: int = 1,
    ) -> None:
        self.port = port or free_port()
        self.api_key = api_key
        self.verbose = verbose  # its log then says how much of each prompt its cache held
        # llama.cpp's llama-server (absolute: the server starts in a neutral directory);
        # "": llama-cpp-python's server.
        self.binary = str(Path(binary).resolve()) if binary else ""
        self.slots = slots  # llama-server's parallel sequences, each with its own cache
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        if self.binary:
            command = [
                self.binary,
                "--model",
                str(embedded_gguf()),
                "--alias",
                MODEL,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--ctx-size",
                str(4096 * self.slots),
                "--parallel",
                str(self.slots),
                "--threads",
                "2",
            ]
            return command + (["--api-key", self.api_key] if self.api_key else [])
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(embedded_gguf()),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "4096",
            "--n_threads",
            "2",
            "--n_threads_batch",
            "2",
            "--verbose",
            str(self.verbose),
        ]
        return command + (["--api_key", self.api_key] if self.api_key else [])

    def start(self, timeout: float = 120) -> LlamaServer:
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.log.parent,
                env={**os.environ, "PYTHONSAFEPATH": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log.read_text()[-2000:]}")
            if self.answers():
                return self
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"llama_cpp.server did not start: {self.log.read_text()[-2000:]}")

    def answers(self) -> bool:
        request = urllib.request.Request(self.url + "/models")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with direct.open(request, timeout=1) as response:
                return bool(json.load(response).get("data"))
        except OSError:
            return False

    def pause(self) -> None:
        """Stop the process (SIGSTOP): it takes connections (the kernel queues them) and
        answers nothing, so a request sent now is still with it when it is killed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGSTOP)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def close(self) -> None:
        """Killed, and its log's folder removed: nothing left behind in the temp dir."""
        self.kill()
        shutil.rmtree(self.log.parent, ignore_errors=True)
