"""The package map of the ``dro-lab`` distribution (the metadata is in pyproject.toml).

Two import packages: ``dro_lab`` (the library, from ``dro_lab/``) and ``dro_course`` (the course, from ``course/``),
whose notebooks stay in ``notebooks/`` (where the Binder and Colab links point) and ship as ``dro_course/notebooks``.
Listed here because pyproject.toml's ``packages.find`` cannot rename a folder. Folders of data (the reference runs,
the manual, the templates) are listed as packages too, so that setuptools ships their files without a warning.
"""

from setuptools import find_namespace_packages, setup

SKIP = ["*.__pycache__", "*.__pycache__.*"]
library = find_namespace_packages(include=["dro_lab", "dro_lab.*"], exclude=SKIP)
course = [
    "dro_course" + name.removeprefix("course")
    for name in find_namespace_packages(include=["course", "course.*"], exclude=SKIP)
]

setup(
    packages=[*library, *course, "dro_course.notebooks"],
    package_dir={"dro_course": "course", "dro_course.notebooks": "notebooks"},
)
