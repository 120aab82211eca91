"""The exercises' solutions, one file per lesson in jupytext's percent format, read by
:mod:`dro_course.exercises` (the instructor copy). Data, not modules: their names start
with the lesson's number."""
