"""The cache file: its format (:mod:`.format`), reading it strictly (:mod:`.parse`), whole-file
checks (:mod:`.checks`), signatures (:mod:`.signing`).
"""
