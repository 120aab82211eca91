"""Lesson 00 (welcome): the table of the lessons (:mod:`.overview`), the values its exercise checks compare with
(:mod:`.expected`) and every name its cells call (:mod:`.toolkit`)."""
