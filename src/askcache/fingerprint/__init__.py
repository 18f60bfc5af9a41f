"""A step's fingerprint: computed from the screen before the step when recording, checked before
replaying it (:mod:`.step`), with the step's mask (:mod:`.masks`) and the screenshots it reads
(:mod:`.screenshots`).
"""
