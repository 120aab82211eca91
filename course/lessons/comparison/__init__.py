"""Lesson 07, every method compared: ``report`` (the comparison's table and what held)."""
