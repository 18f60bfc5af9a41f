"""The screens a run's steps really saw, where its history's screenshots are not them.

A replayed action's tool result carries a screenshot taken the moment it ran (the replay waits
for the screen itself, so the computer tool skips its settle delay): often the screen from
before the action, still unchanged. The replay looks at the screen itself before each step it
checks, until the screen is still; those looks are what each step really acted on and what
the step before it really did. :class:`SeenScreens` keeps them, by tool call id, so that a
trajectory built from the run afterwards (a heal, a learned screen profile) fingerprints each
step on the screen it acted on and records its effect against the screen it left, not against
the screenshots of the history.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image

__all__ = ["SeenScreens"]


@dataclass
class SeenScreens:
    """Per tool call id: the screen before the call and the screen once it had acted, as the
    run looked at them (the size the model sees). A call missing here is built from the
    history's screenshots."""

    before: dict[str, Image.Image] = field(default_factory=dict)
    """The screen the call was checked on, just before it ran."""
    after: dict[str, Image.Image] = field(default_factory=dict)
    """The latest screen looked at after the call and before the next call that needed a
    look (the next step's check, a hand-back, the end state)."""
    keep: bool = True
    """Keep the looks; ``False``: nothing is kept (no trajectory will be built from the run,
    and its memory stays flat)."""
    _latest: Image.Image | None = None
    _open: list[str] = field(default_factory=list)
    """The calls emitted since the last one that was checked on a look: the next look is the
    screen they left."""

    def looked(self, image: Image.Image) -> None:
        """The latest look at the screen, the one a phase decided on: the screen the calls
        emitted since the last checked one left, and the one the next call is checked on."""
        if not self.keep:
            return
        self._latest = image
        for call_id in self._open:
            self.after[call_id] = image

    def emitted(self, call_id: str, *, on_look: bool) -> None:
        """The call ``call_id`` runs; ``on_look``: it was checked on the latest look, which
        is then the screen it acted on."""
        if not self.keep:
            return
        if on_look and self._latest is not None:
            self.before[call_id] = self._latest
            self._open = [call_id]
        else:
            self._open.append(call_id)

    def handed_back(self) -> None:
        """The run handed back: the screens looked at from now on follow the model's actions,
        not the calls emitted so far."""
        self._open = []
        self._latest = None
