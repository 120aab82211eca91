"""The set-up check of lesson 00: the versions of what the course needs, the device, the CPU threads.

:func:`environment_report` returns Markdown for the lesson to display; a missing *required* package raises
``ImportError`` with the command that installs it, a missing *optional* one is listed with the feature it turns off.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

from dro_course._files import md_cell

__all__ = ["OPTIONAL_PACKAGES", "REQUIRED_PACKAGES", "environment_report"]

#: Package (its distribution name) → what the course uses it for.
REQUIRED_PACKAGES = {
    "dro-lab": "the library",
    "torch": "models and training",
    "numpy": "arrays",
    "plotly": "every figure",
    "ipywidgets": "sliders and Run buttons",
    "PyYAML": "the syllabus",
}
OPTIONAL_PACKAGES = {
    "scipy": "the independent numerical checks of lesson 01",
    "anywidget": "live-updating plotly FigureWidgets",
    "papermill": "batch runs (dro-course run)",
    "jupyterlab": "the JupyterLab front-end (make lab)",
    "torchvision": "real MNIST / CIFAR-10 when their files are on disk",
    "scikit-learn": "the embedded digits data",
}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def environment_report(device: Any = None) -> str:
    """A Markdown table of the packages (version, what for) and the machine: Python, the lessons' device, CUDA,
    the CPU cores and torch's threads. Raises ``ImportError`` naming every missing required package."""
    import torch  # torch only for the machine lines: importing the course package stays cheap

    rows = ["| package | version | used for |", "|---|---|---|"]
    missing = []
    for group, packages in (("required", REQUIRED_PACKAGES), ("optional", OPTIONAL_PACKAGES)):
        for name, purpose in packages.items():
            version = _version(name)
            if version is None and group == "required":
                missing.append(name)
            shown = version or f"**missing** ({group})"
            rows.append(f"| {name} | {md_cell(shown)} | {md_cell(purpose)} |")
    if missing:
        raise ImportError(
            f"missing required package(s): {', '.join(missing)}. From the repository root run `make course` "
            "(creates .venv from the pinned set) or `pip install -e '.[all]'`."
        )
    device = torch.device(device) if device is not None else torch.device("cpu")
    cuda = torch.cuda.is_available()
    name = f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""
    machine = [
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}",
        f"device for the lessons: **{device}**{name}",
        f"CUDA available: {cuda}"
        + (f", {torch.cuda.device_count()} device(s)" if cuda else " (the smoke and full presets run on a CPU)"),
        f"CPU: {os.cpu_count()} logical cores; torch uses {torch.get_num_threads()} thread(s)",
    ]
    return "\n".join(rows) + "\n\n" + "  \n".join(machine) + "\n\n**Set-up OK.**"
