"""Every name Lesson 00's cells call, for the one import of its set-up cell
(``from dro_course.lessons.welcome.toolkit import *``).

The names every lesson shares come from :mod:`dro_course.lessons.common`; this lesson adds the set-up check, the
syllabus with its table of the lessons (:mod:`.overview`) and ``math`` (for β = ∞).
"""

from __future__ import annotations

import math

from dro_course.environment import environment_report
from dro_course.lessons.common import *  # noqa: F403 - the names every lesson shares
from dro_course.lessons.common import __all__ as _common
from dro_course.lessons.welcome.overview import lessons_overview
from dro_course.syllabus import load_syllabus

__all__ = [
    *_common,
    # the standard library
    "math",
    # the course: the set-up check of section 2; the syllabus and this lesson's table of it (section 4)
    "environment_report",
    "load_syllabus",
    "lessons_overview",
]
