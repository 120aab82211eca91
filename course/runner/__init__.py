"""Lessons executed with papermill: one lesson (``execute``), a course of them (``run``: :func:`run_course`, locally or
on Dask through ``dask_executor``), a parameter sweep (``sweep``), and what a run reports (``failures``,
``report``, ``sweep_report``). ``control`` stops a run cleanly; ``instructor`` runs the solutions with the lesson and
splits the executed notebook into the student and instructor copies; ``rerender`` refreshes the prose of a cached run.
"""
