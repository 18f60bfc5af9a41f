"""A real Tk contact-form application, run in its own process on an X display.

    python -m askcache.testing.tk_form --state STATE.json [--layout original|banner|swapped]

It shows Name and Email fields, Save and Clear buttons and a status line. After every change
it writes its state (field values, saved contacts, focus) and each widget's position on the
screen to ``STATE.json`` (atomically), so tests can check what the application really did
and the offline scripted model can find its widgets. :class:`TkFormApp` starts and stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from askcache.actions import Point
from askcache.errors import AskCacheError
from askcache.testing.simulated import Layout, Widget

__all__ = ["TkFormApp", "main"]


class _FormWindow:
    """The Tk window of the child process."""

    FONT = ("DejaVu Sans", 12)
    BACKGROUND = "#eceff4"

    def __init__(self, state_path: Path, layout: str, geometry: str) -> None:
        import tkinter as tk

        self.tk = tk
        self.state_path = state_path
        self.layout = layout
        self.root = tk.Tk()
        self.root.title("Contacts")
        self.root.geometry(geometry)
        self.root.configure(background=self.BACKGROUND)
        self.saved: list[dict[str, str]] = []
        self.status = tk.StringVar(value="Ready")
        self._header()
        self.entries = self._fields()
        self.buttons = self._buttons()
        tk.Label(
            self.root,
            textvariable=self.status,
            bg=self.BACKGROUND,
            fg="#3c3c3c",
            font=self.FONT,
            anchor="w",
        ).pack(side="bottom", fill="x", padx=20, pady=8)
        for entry in self.entries.values():
            entry.bind("<KeyRelease>", self._soon)
            entry.bind("<FocusIn>", self._soon)
        self.root.bind("<Return>", lambda _: self.save())
        self.root.after(200, self.publish)

    def _header(self) -> None:
        tk = self.tk
        tk.Label(
            self.root,
            text="Contacts - New entry",
            bg="#34495e",
            fg="white",
            font=self.FONT,
            anchor="w",
            padx=12,
        ).pack(fill="x", ipady=6)
        if self.layout == "banner":
            notice = "Update: a new version of Contacts is installed."
            tk.Label(
                self.root, text=notice, bg="#fff3cd", fg="#5a4614", font=self.FONT, pady=18
            ).pack(fill="x", padx=20, pady=(14, 0))

    def _fields(self) -> dict[str, Any]:
        tk = self.tk
        form = tk.Frame(self.root, bg=self.BACKGROUND)
        form.pack(fill="x", padx=20, pady=20)
        entries: dict[str, Any] = {}
        for row, (key, label) in enumerate([("name", "Name:"), ("email", "Email:")]):
            tk.Label(
                form, text=label, bg=self.BACKGROUND, font=self.FONT, width=8, anchor="w"
            ).grid(row=row, column=0, pady=10)
            entry = tk.Entry(
                form, font=self.FONT, width=34, relief="solid", borderwidth=1, highlightthickness=2
            )
            entry.grid(row=row, column=1, pady=10, ipady=6)
            entries[key] = entry
        return entries

    def _buttons(self) -> dict[str, Any]:
        tk = self.tk
        frame = tk.Frame(self.root, bg=self.BACKGROUND)
        frame.pack(fill="x", padx=40, pady=10)
        style = {"fg": "white", "font": self.FONT, "width": 9}
        buttons = {
            "save": tk.Button(
                frame,
                text="Save",
                command=self.save,
                bg="#2e7d32",
                activebackground="#2e7d32",
                **style,
            ),
            "clear": tk.Button(
                frame,
                text="Clear",
                command=self.clear,
                bg="#787878",
                activebackground="#787878",
                **style,
            ),
        }
        order = ["clear", "save"] if self.layout == "swapped" else ["save", "clear"]
        for key in order:
            buttons[key].pack(side="left", padx=(0, 30))
        return buttons

    def _soon(self, *_: Any) -> None:
        self.root.after(10, self.publish)

    def save(self) -> None:
        self.saved.append({key: entry.get() for key, entry in self.entries.items()})
        self.status.set(f"Saved {self.entries['name'].get() or '(empty)'}")
        self._soon()

    def clear(self) -> None:
        for entry in self.entries.values():
            entry.delete(0, "end")
        self.status.set("Cleared")
        self._soon()

    def publish(self) -> None:
        """Write the state and the widgets' screen boxes to the state file, atomically."""
        self.root.update_idletasks()
        focused = self.root.focus_get()
        widgets = {**self.entries, **self.buttons}
        state = {
            "pid": os.getpid(),
            "layout": self.layout,
            "values": {key: entry.get() for key, entry in self.entries.items()},
            "saved": self.saved,
            "status": self.status.get(),
            "focus": next((k for k, e in self.entries.items() if e is focused), None),
            "widgets": {
                key: [
                    w.winfo_rootx(),
                    w.winfo_rooty(),
                    w.winfo_rootx() + w.winfo_width(),
                    w.winfo_rooty() + w.winfo_height(),
                ]
                for key, w in widgets.items()
            },
        }
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.state_path)


def main(argv: list[str] | None = None) -> None:
    """Run the form (the body of the child process)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--state", required=True)
    parser.add_argument("--layout", default="original", choices=["original", "banner", "swapped"])
    parser.add_argument("--geometry", default="640x400+0+0")
    args = parser.parse_args(argv)
    _FormWindow(Path(args.state), args.layout, args.geometry).root.mainloop()


class TkFormApp:
    """The Tk form running in a child process on ``display``; a view of its published state.

    Use as a context manager. Implements the view :class:`FormFillingScript` reads
    (``values``, ``saved``, ``focus``, ``widget(name)``), in screen coordinates.
    """

    def __init__(
        self,
        display: str,
        state_file: Path,
        *,
        layout: Layout = "original",
        geometry: str = "640x400+0+0",
    ) -> None:
        self.display = display
        self.state_file = Path(state_file)
        self.layout = layout
        self.geometry = geometry
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TkFormApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 20.0) -> None:
        """Launch the application and wait until it has published its first state."""
        self.state_file.unlink(missing_ok=True)
        env = {**os.environ, "DISPLAY": self.display}
        command = [
            sys.executable,
            "-m",
            "askcache.testing.tk_form",
            "--state",
            str(self.state_file),
            "--layout",
            self.layout,
            "--geometry",
            self.geometry,
        ]
        self._process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        while not self.state_file.exists():
            if self._process.poll() is not None:
                error = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise AskCacheError(f"the Tk form exited at start: {error.strip()[-500:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise AskCacheError(f"the Tk form did not start within {timeout} s")
            time.sleep(0.05)
        time.sleep(0.3)  # let the first frame be drawn

    def stop(self) -> None:
        """Close the application."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stderr:
                self._process.stderr.close()
            self._process = None

    def state(self) -> dict[str, Any]:
        """The latest published state."""
        for _ in range(50):
            try:
                return dict(json.loads(self.state_file.read_text()))
            except (FileNotFoundError, json.JSONDecodeError):
                time.sleep(0.02)
        raise AskCacheError(f"cannot read the Tk form's state from {self.state_file}")

    @property
    def values(self) -> dict[str, str]:
        """Field values."""
        return dict(self.state()["values"])

    @property
    def saved(self) -> list[dict[str, str]]:
        """Contacts saved so far."""
        return list(self.state()["saved"])

    @property
    def focus(self) -> str | None:
        """The focused field."""
        value = self.state()["focus"]
        return str(value) if value is not None else None

    def widget(self, name: str) -> Widget:
        """A widget's box on the screen."""
        left, top, right, bottom = self.state()["widgets"][name]
        if name in ("name", "email"):
            return Widget(name, "field", name.title(), (left, top, right, bottom))
        return Widget(name, "button", name.title(), (left, top, right, bottom))

    def center(self, name: str) -> Point:
        """A widget's middle, on the screen."""
        return self.widget(name).center


if __name__ == "__main__":
    main()
