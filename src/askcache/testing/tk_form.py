"""A real Tk contact-form application, run in its own process on an X display.

    python -m askcache.testing.tk_form --state STATE.json [--layout L] [--zoom Z]

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
from askcache.testing._process import stop_process
from askcache.testing.simulated import Layout, SimulatedFormApp, Widget

__all__ = ["TkFormApp", "main"]


class _FormWindow:
    """The Tk window of the child process.

    Widgets are placed at the pixel boxes of :class:`SimulatedFormApp`'s layout (one layout
    definition for both forms), scaled by ``zoom`` with pixel-sized fonts, so the form looks
    the same, only larger, on a larger screen.
    """

    BACKGROUND = "#eceff4"

    def __init__(
        self,
        state_path: Path,
        layout: Layout,
        zoom: float,
        variant: argparse.Namespace | None = None,
    ) -> None:
        import tkinter as tk

        self.variant = variant or argparse.Namespace(
            save_label="Save",
            disabled=False,
            hide_save=False,
            dialog=False,
            status="Ready",
            focus=None,
        )

        self.tk = tk
        self.state_path = state_path
        self.layout = layout
        self.zoom = zoom
        self.plan = SimulatedFormApp(
            width=round(640 * zoom), height=round(400 * zoom), layout=layout
        )
        self.font = ("DejaVu Sans", -round(12 * zoom))
        self.root = tk.Tk()
        self.root.title("Contacts")
        self.root.geometry(f"{self.plan.width}x{self.plan.height}+0+0")
        self.root.configure(background=self.BACKGROUND)
        self.saved: list[dict[str, str]] = []
        self.status = tk.StringVar(value=self.variant.status)
        self._label("Contacts - New entry", (0, 0, 640, 36), bg="#34495e", fg="white", padx=12)
        if layout == "banner":
            notice = "Update: a new version of Contacts is installed."
            self._label(notice, (20, 56, 620, 120), bg="#fff3cd", fg="#5a4614", padx=16)
        self.entries: dict[str, Any] = {}
        self.buttons: dict[str, Any] = {}
        for widget in self.plan.widgets():
            if widget.kind == "field":
                self._field(widget)
            else:
                self._button(widget)
        status = tk.Label(
            self.root,
            textvariable=self.status,
            bg=self.BACKGROUND,
            fg="#3c3c3c",
            font=self.font,
            anchor="w",
        )
        self._place(status, (20, 362, 620, 392))
        self.root.bind("<Return>", lambda _: self.save())
        if self.variant.dialog:
            self._dialog()
        if self.variant.focus:
            self.entries[self.variant.focus].focus_set()
        self.root.after(200, self.publish)

    def _place(
        self, widget: Any, box: tuple[float, float, float, float], *, scaled: bool = False
    ) -> None:
        z = 1.0 if scaled else self.zoom
        left, top, right, bottom = (round(v * z) for v in box)
        widget.place(x=left, y=top, width=right - left, height=bottom - top)

    def _label(self, text: str, box: tuple[float, float, float, float], **style: Any) -> None:
        label = self.tk.Label(self.root, text=text, font=self.font, anchor="w", **style)
        self._place(label, box)

    def _field(self, widget: Widget) -> None:
        left, top, _, bottom = widget.box
        caption = self.tk.Label(
            self.root, text=f"{widget.label}:", bg=self.BACKGROUND, font=self.font, anchor="w"
        )
        self._place(
            caption, (left - 140 * self.zoom, top, left - 10 * self.zoom, bottom), scaled=True
        )
        entry = self.tk.Entry(
            self.root,
            font=self.font,
            relief="solid",
            borderwidth=1,
            highlightthickness=round(2 * self.zoom),
        )
        self._place(entry, widget.box, scaled=True)
        entry.bind("<KeyRelease>", self._soon)
        entry.bind("<FocusIn>", self._soon)
        self.entries[widget.name] = entry

    def _dialog(self) -> None:
        """A confirmation box over the middle of the form (a variant for benchmarks)."""
        frame = self.tk.Frame(
            self.root, bg="#ffffff", highlightbackground="#555555", highlightthickness=2
        )
        self._place(frame, (40, 150, 400, 300))
        self.tk.Label(frame, text="Discard the changes?", bg="#ffffff", font=self.font).pack(
            pady=20
        )
        self.tk.Button(frame, text="Discard", font=self.font).pack(side="left", padx=30)
        self.tk.Button(frame, text="Keep", font=self.font).pack(side="right", padx=30)

    def _button(self, widget: Widget) -> None:
        if widget.name == "save" and self.variant.hide_save:
            return
        color = "#2e7d32" if widget.name == "save" else "#787878"
        command = self.save if widget.name == "save" else self.clear
        label = self.variant.save_label if widget.name == "save" else widget.label
        button = self.tk.Button(
            self.root,
            text=label,
            command=command,
            bg=color,
            activebackground=color,
            fg="white",
            font=self.font,
        )
        if widget.name == "save" and self.variant.disabled:
            button.configure(state="disabled", bg="#a5c8a7")
        self._place(button, widget.box, scaled=True)
        self.buttons[widget.name] = button

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
    parser.add_argument("--zoom", type=float, default=1.0, help="draw everything this much larger")
    variants = parser.add_argument_group("variants, for benchmarks")
    variants.add_argument("--save-label", default="Save")
    variants.add_argument("--disabled", action="store_true", help="the Save button is disabled")
    variants.add_argument("--hide-save", action="store_true", help="there is no Save button")
    variants.add_argument("--dialog", action="store_true", help="a dialog covers the form")
    variants.add_argument("--status", default="Ready", help="the status line's text")
    variants.add_argument("--focus", choices=["name", "email"], default=None)
    args = parser.parse_args(argv)
    _FormWindow(Path(args.state), args.layout, args.zoom, args).root.mainloop()


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
        zoom: float = 1.0,
        extra_args: list[str] | None = None,
    ) -> None:
        self.extra_args = list(extra_args or [])
        """More command-line options for the form (the variants of ``--help``)."""
        self.display = display
        self.state_file = Path(state_file)
        self.layout = layout
        self.zoom = zoom
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
            "--zoom",
            str(self.zoom),
            *self.extra_args,
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
        stop_process(self._process)
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
