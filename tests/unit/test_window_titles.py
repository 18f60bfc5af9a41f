"""Window titles as stored and compared: no path, user or host name of the machine (the real
windows: tests/integration/test_window_titles.py)."""

from __future__ import annotations

import pytest

from askcache.foundation.screen.titles import machine_names, neutral_title
from askcache.foundation.screen.windows import WindowFrame, find_window

NAMES = {"users": ["ada"], "hosts": ["build-07.example.org", "build-07"]}


@pytest.mark.parametrize(
    ("title", "stored"),
    [
        ("/home/ada/docs/plan.txt - Editor", "plan.txt - Editor"),
        ("ada@build-07: ~/src/askcache", "<user>@<host>: askcache"),
        ("~ada/notes.md (~/other) - Mousepad", "notes.md (other) - Mousepad"),
        ("file:///home/ada/report.html - Firefox", "report.html - Firefox"),
        (r"C:\Users\ada\doc.txt - Notepad", "doc.txt - Notepad"),
        ("/home/ada/ada-notes.txt", "<user>-notes.txt"),
        ("Terminal on BUILD-07.example.org", "Terminal on <host>"),
        # no machine in them: kept as they are
        ("https://example.org/a/b - Browser", "https://example.org/a/b - Browser"),
        ("docs/plan.txt - Editor", "docs/plan.txt - Editor"),
        ("Calculator", "Calculator"),
        ("adamant", "adamant"),
        ("/", "/"),
    ],
)
def test_a_title_is_stored_without_the_machines_paths_user_and_host(
    title: str, stored: str
) -> None:
    assert neutral_title(title, **NAMES) == stored
    assert neutral_title(stored, **NAMES) == stored  # applying it again changes nothing


def test_a_one_character_name_is_left_alone() -> None:
    assert neutral_title("Save a file", users=["a"], hosts=["h"]) == "Save a file"


def test_this_machines_names_are_replaced_by_default() -> None:
    users, hosts = machine_names()
    for name in (*users, *hosts):
        if len(name) > 1:
            stored = neutral_title(f"{name} - /tmp/x/{name}.txt")
            assert stored is not None
            assert name not in stored


def test_stored_frames_keep_everything_but_the_title() -> None:
    frame = WindowFrame(x=5, y=6, width=200, height=100, wm_class="Ed", title="/tmp/a/b.txt")
    assert frame.stored() == frame.model_copy(update={"title": "b.txt"})
    assert frame.model_copy(update={"title": None}).stored().title is None


def test_a_window_is_found_by_its_stored_title_among_windows_of_one_class() -> None:
    def window(x: int, title: str) -> WindowFrame:
        return WindowFrame(x=x, y=0, width=200, height=100, wm_class="Ed", title=title)

    alpha, beta = window(0, "/srv/docs/alpha.txt - Ed"), window(300, "/srv/docs/beta.txt - Ed")
    recorded = window(0, "/home/someone/docs/beta.txt - Ed").stored()
    assert recorded.title == "beta.txt - Ed"
    assert find_window(recorded, [alpha, beta]) == beta
    # an older file stored the title with its path: compared the same way
    assert find_window(window(0, "/home/someone/beta.txt - Ed"), [alpha, beta]) == beta


def test_a_stored_title_stays_within_the_length_a_file_allows() -> None:
    users, hosts = machine_names()
    short = [name for name in (*users, *hosts) if 1 < len(name) < len("<user>")]
    if not short:
        pytest.skip("needs a user or host name shorter than its placeholder")
    title = " ".join([short[0]] * 200)[:500]
    frame = WindowFrame(x=0, y=0, width=10, height=10, wm_class="Ed", title=title)
    stored = frame.stored()
    assert stored.title is not None
    assert len(stored.title) == 500
    WindowFrame.model_validate(stored.model_dump())  # loads again
    assert find_window(stored, [frame]) == frame


@pytest.mark.parametrize(
    ("title", "stored"),
    [
        ("ada@build-07: /srv/clients/acme", "<user>@<host>: acme"),
        ("ada@build-07:/srv/clients/acme", "<user>@<host>:acme"),
        ("ada@build-07.corp.example:~/clients/acme", "<user>@<host>:acme"),
        ("Editor:/home/ada/notes/plan.txt", "Editor:plan.txt"),
        ("see https://example.com/a/b - Browser", "see https://example.com/a/b - Browser"),
    ],
)
def test_a_path_right_after_a_colon_is_cut_too(title: str, stored: str) -> None:
    # a terminal's title is user@host:PATH, with no space before the path
    hosts = {"build-07", "build-07.corp.example"}
    assert neutral_title(title, users={"ada"}, hosts=hosts) == stored
