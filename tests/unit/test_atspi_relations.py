"""What the AT-SPI source reads from a relation set and how it knows an open menu's items
(:mod:`askcache.tools.atspi`): the replies are shaped as AT-SPI sends them over D-Bus."""

from __future__ import annotations

from askcache.tools.atspi import _fills, _labelled_by


def test_only_labelled_by_relations_name_labels() -> None:
    reply = (
        [
            (1, [(":1.2", "/org/a11y/atspi/accessible/8")]),  # LABEL_FOR: it labels another
            (2, [(":1.2", "/org/a11y/atspi/accessible/10"), (":1.2", "/org/a11y/atspi/null")]),
            (3, [(":1.2", "/org/a11y/atspi/accessible/12")]),  # CONTROLLER_FOR
        ],
    )
    assert _labelled_by(reply) == [(":1.2", "/org/a11y/atspi/accessible/10")]
    assert _labelled_by(([],)) == []
    assert _labelled_by(()) == []
    assert _labelled_by(([("not", "a relation", 3)],)) == []


def test_a_popups_items_must_span_it() -> None:
    popup = (0, 25, 304, 355)
    rows = [(0, 25 + 25 * i, 304, 25) for i in range(14)]
    assert _fills(popup, rows)
    assert not _fills(popup, rows[3:6])  # a few items of something else inside it
