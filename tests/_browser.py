"""Helpers for the real-browser test (``test_browser.py``): a headless JupyterLab server on a free
loopback port and a Playwright-driven Debian Chromium. Nothing here reaches the network: the server's
news / update checks are off, and Playwright never downloads a browser (it drives ``/usr/bin/chromium``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Chromium flags: headless, no sandbox (CI runs as root), and nothing that phones home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

#: JupyterLab user settings for the test: every cell in the DOM (no windowing, so the test sees every
#: prompt) and no news / update notifications.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"checkForUpdates": False, "fetchNews": "false"},
}


def find_chromium() -> str | None:
    """The Debian Chromium (``DRO_LAB_CHROMIUM`` overrides), or None when there is none."""
    explicit = os.environ.get("DRO_LAB_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """``jupyter lab`` on 127.0.0.1:<free port> with a random token, serving ``root_dir``.

    Its stdout/stderr go to ``log_path``; :meth:`log_tail` is attached to failure messages.
    The server's environment is this process's plus ``env`` (the kernel inherits it).
    """

    def __init__(self, root_dir: Path, work_dir: Path, env: dict[str, str | None] | None = None):
        self.root_dir = Path(root_dir)
        self.work_dir = Path(work_dir)
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.log_path = self.work_dir / "jupyterlab.log"
        self.extra_env = dict(env or {})
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def log_tail(self, chars: int = 6000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return text[-chars:]

    def _environment(self) -> dict[str, str]:
        # Private Jupyter dirs: the user's config, settings and workspaces play no part, and the
        # workspace is not saved anywhere that outlives the test.
        dirs = {
            name: self.work_dir / name for name in ("config", "data", "runtime", "settings", "workspaces", "ipython")
        }
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        for rel, value in LAB_SETTINGS.items():
            target = dirs["settings"] / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value))
        env = dict(os.environ)
        env.update(
            {
                "JUPYTER_CONFIG_DIR": str(dirs["config"]),
                "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
                "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
                "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
                "IPYTHONDIR": str(dirs["ipython"]),
                "JUPYTER_PLATFORM_DIRS": "1",
            }
        )
        for key, value in self.extra_env.items():  # None: unset in the server (and kernel) environment
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def start(self, timeout: float = 90.0) -> None:
        cmd = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root_dir}",
            "--ServerApp.allow_root=True",  # CI runs as root
            "--LabApp.extension_manager=readonly",  # no PyPI queries from the extension manager
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.expose_app_in_browser=True",
        ]
        env = self._environment()  # creates work_dir
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - JupyterLab writes to it until stop() closes it
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.root_dir,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        status_url = f"{self.base_url}/api/status?token={self.token}"
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with code {self.proc.returncode} before answering "
                    f"{self.base_url}/api/status; server log:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(status_url, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"JupyterLab did not answer {self.base_url}/api/status within {timeout:.0f} s; "
                    f"server log:\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            # the server and its kernels: its own process group (start_new_session), ended by its id
            try:
                os.killpg(proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, 9)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
