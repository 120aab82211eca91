"""Lesson 00 (welcome): the values its exercise checks compare with (:mod:`.expected`)."""
