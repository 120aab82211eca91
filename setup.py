"""The package map of the ``dro-lab`` distribution (the metadata is in pyproject.toml).

Two import packages: ``dro_lab`` (the library, from ``dro_lab/``) and ``dro_course`` (the course, from ``course/``),
whose notebooks stay in ``notebooks/`` (where the Binder and Colab links point) and ship as ``dro_course/notebooks``.
Listed here because pyproject.toml's ``packages.find`` cannot rename a folder.
"""

from setuptools import find_packages, setup

library = find_packages(include=["dro_lab", "dro_lab.*"])
course = ["dro_course" + name.removeprefix("course") for name in find_packages(include=["course", "course.*"])]

setup(
    packages=[*library, *course, "dro_course.notebooks"],
    package_dir={"dro_course": "course", "dro_course.notebooks": "notebooks"},
)
