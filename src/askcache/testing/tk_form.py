"""A real Tk contact-form application, run in its own process on an X display.

    python -m askcache.testing.tk_form --state STATE.json [--layout L] [--zoom Z] [faults]

It shows Name and Email fields, Save and Clear buttons and a status line. Once its window is
drawn, and after every change, it writes its state (field values, saved contacts, focus) and
each widget's position on the screen to ``STATE.json`` (atomically), so tests can check what
the application really did and the offline scripted model can find its widgets.
:class:`TkFormApp` starts and stops it, and asks it for its state at a known moment instead
of sleeping: :meth:`TkFormApp.current` (every input the X server has delivered handled and
drawn) and :meth:`TkFormApp.settled` (a slow form: every delayed input applied as well). Tests
wait on these events, never on a time margin.

Faults, for the fault-injection tests (``tests/integration/test_fault_injection.py``). An
*input* is a left-button release or a key press that types a character (or Return); the
state counts them (``inputs``) and lists the faults on screen (``faults``):

``--position X Y``        the window's top-left corner on the screen (default 0 0)
``--prefill TEXT``        the Name field starts with ``TEXT``
``--change-after N``      after N inputs the layout becomes ``--change-to`` (default banner)
``--dialog-after N``      after N inputs a modal dialog covers the middle of the form; its
                          Close button (``dialog_close``) or Escape dismisses it
``--backdrop-after N``    after N inputs the form is dimmed under a modal box whose Continue
                          button (``backdrop_continue``) or Escape dismisses it
``--slow SECONDS``        every input takes effect SECONDS late (focus, text, buttons)
``--freeze-after N``      after N inputs the form ignores all input (counted as ``ignored``)

A modal box takes the keyboard focus and gives it back to the widget that had it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from askcache.foundation.errors import AskCacheError
from askcache.foundation.geometry import Point
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

        self.variant = variant or _parser().parse_args(["--state", str(state_path)])

        self.tk = tk
        self.state_path = state_path
        self.layout = layout
        self.zoom = zoom
        self.plan = SimulatedFormApp(
            width=round(640 * zoom), height=round(400 * zoom), layout=layout
        )
        self.font = ("DejaVu Sans", -round(12 * zoom * self.variant.font_scale))
        if self.variant.theme == "dark":
            self.BACKGROUND = "#2e3440"
        self.root = tk.Tk()
        self.root.title("Contacts")
        x, y = self.variant.position
        self.root.geometry(f"{self.plan.width}x{self.plan.height}+{x}+{y}")
        self.root.configure(background=self.BACKGROUND)
        self.saved: list[dict[str, str]] = []
        self.status = tk.StringVar(value=self.variant.status)
        self.initial_layout = layout
        self.inputs = 0
        self.ignored = 0
        self.frozen = False
        self.modal: dict[str, Any] = {}
        """The modal boxes on screen: ``dialog`` and/or ``backdrop``, by name."""
        self.dimmed: list[tuple[Any, dict[str, str]]] = []
        self._label("Contacts - New entry", (0, 0, 640, 36), bg="#34495e", fg="white", padx=12)
        notice = "Update: a new version of Contacts is installed."
        self.banner = self.tk.Label(
            self.root, text=notice, font=self.font, anchor="w", bg="#fff3cd", fg="#5a4614", padx=16
        )
        self.entries: dict[str, Any] = {}
        self.captions: dict[str, Any] = {}
        self.buttons: dict[str, Any] = {}
        for widget in self.plan.widgets():
            if widget.kind == "field":
                self._field(widget)
            else:
                self._button(widget)
        self._arrange()
        status = tk.Label(
            self.root,
            textvariable=self.status,
            bg=self.BACKGROUND,
            fg="#d8dee9" if self.variant.theme == "dark" else "#3c3c3c",
            font=self.font,
            anchor="w",
        )
        self._place(status, (20, 362, 620, 392))
        self.root.bind("<Return>", lambda _: self.save())
        if self.variant.prefill:
            self.entries["name"].insert(0, self.variant.prefill)
        if self.variant.dialog:
            self._dialog()
        if self.variant.focus:
            self.entries[self.variant.focus].focus_set()
        self._watch_inputs()
        self.pending = 0
        """Inputs a slow form received and has not applied yet."""
        self.answered = ""
        """The token of the last request answered (see :meth:`TkFormApp.current`)."""
        self._show()

    def _show(self) -> None:
        """Wait until the window is on screen, start the faults due at once, draw, publish
        the first state, and start answering requests."""
        self.root.wait_visibility()
        self._triggers(0)
        self.root.update()  # drawn, and the X server has done the drawing (update syncs)
        self.publish()
        self._answer()

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
        dark = self.variant.theme == "dark"
        caption = self.tk.Label(
            self.root,
            text=f"{widget.label}:",
            bg=self.BACKGROUND,
            font=self.font,
            anchor="w",
        )
        self.captions[widget.name] = caption
        entry = self.tk.Entry(
            self.root,
            font=self.font,
            relief="solid",
            borderwidth=1,
            highlightthickness=round(2 * self.zoom),
        )
        if dark:
            caption.configure(fg="#eceff4")
            entry.configure(bg="#3b4252", fg="#eceff4", insertbackground="#eceff4")
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

    def _arrange(self) -> None:
        """Place the banner, captions, fields and buttons where the current layout puts them."""
        if self.plan.layout == "banner":
            self._place(self.banner, (20, 56, 620, 120))
        else:
            self.banner.place_forget()
        for widget in self.plan.widgets():
            left, top, _, bottom = widget.box
            if widget.kind == "field":
                caption = (left - 140 * self.zoom, top, left - 10 * self.zoom, bottom)
                self._place(self.captions[widget.name], caption, scaled=True)
                self._place(self.entries[widget.name], widget.box, scaled=True)
            elif widget.name in self.buttons:
                self._place(self.buttons[widget.name], widget.box, scaled=True)

    # Faults -------------------------------------------------------------------------------

    def _watch_inputs(self) -> None:
        """Put the ``Fault`` binding tag first on every widget: it sees each input before
        the widget does, counts it, and may drop it (frozen) or delay it (slow)."""
        self._tag(self.root)
        for sequence in ("<ButtonPress>", "<ButtonRelease>", "<KeyPress>", "<KeyRelease>"):
            self.root.bind_class("Fault", sequence, self._on_input)

    def _tag(self, widget: Any) -> None:
        widget.bindtags(("Fault", *widget.bindtags()))
        for child in widget.winfo_children():
            self._tag(child)

    @staticmethod
    def _is_input(event: Any) -> bool:
        """A left-button release, or a key press that types a character or is Return."""
        kind = _kind(event)
        if kind == "ButtonRelease":
            return bool(event.num == 1)
        if kind == "KeyPress":
            return bool(event.char and (event.char.isprintable() or event.keysym == "Return"))
        return False

    def _on_input(self, event: Any) -> str | None:
        if self.frozen:
            if self._is_input(event):
                self.ignored += 1
                self._soon()
            return "break"
        if not self._is_input(event):
            if self.variant.slow and _kind(event) in ("ButtonPress", "KeyPress"):
                return "break"
            return None
        self.inputs += 1
        self.root.after_idle(self._triggers, self.inputs)
        if self.variant.slow:
            later = round(self.variant.slow * 1000)
            self.pending += 1
            self.root.after(later, self._replay_input, event.widget, _kind(event), event)
            return "break"
        return None

    def _replay_input(self, widget: Any, kind: str, event: Any) -> None:
        """What the input would have done, done late (the slow application)."""
        if kind == "ButtonRelease":
            if widget in self.entries.values():
                widget.focus_set()
                widget.icursor("end")
            elif isinstance(widget, self.tk.Button):
                widget.invoke()
        elif event.keysym == "Return":
            self.save()
        elif widget in self.entries.values():
            widget.insert("insert", event.char)
        self.pending -= 1
        self._soon()

    def _triggers(self, count: int) -> None:
        """Start the faults due after ``count`` inputs."""
        v = self.variant
        if v.change_after == count:
            self.plan.layout = v.change_to
            self._arrange()
        if v.dialog_after == count:
            self._modal("dialog", "A new version is available.", "Close", (40, 150, 400, 300))
        if v.backdrop_after == count:
            self._dim(True)
            self._modal(
                "backdrop", "Session expired. Sign in again?", "Continue", (120, 130, 520, 270)
            )
        if v.freeze_after == count:
            self.frozen = True
        self._soon()

    def _modal(self, name: str, text: str, button: str, box: tuple[int, int, int, int]) -> None:
        """A modal box: it takes the keyboard focus and input until dismissed."""
        previous = self.root.focus_get()
        frame = self.tk.Frame(
            self.root, bg="#ffffff", highlightbackground="#555555", highlightthickness=2
        )
        self._place(frame, box)
        self.tk.Label(frame, text=text, bg="#ffffff", font=self.font).pack(pady=20)
        close = self.tk.Button(
            frame, text=button, font=self.font, command=lambda: self._dismiss(name, previous)
        )
        close.pack()
        close.bind("<Escape>", lambda _: self._dismiss(name, previous))
        self._tag(frame)
        frame.lift()
        close.focus_set()
        frame.grab_set()
        self.modal[name] = frame
        self.buttons[f"{name}_{button.lower()}"] = close

    def _dismiss(self, name: str, previous: Any) -> None:
        frame = self.modal.pop(name)
        for key in [k for k in self.buttons if k.startswith(f"{name}_")]:
            del self.buttons[key]
        frame.grab_release()
        frame.destroy()
        if name == "backdrop":
            self._dim(False)
        if previous is not None:
            previous.focus_set()
        else:
            self.root.focus_set()
        self._soon()

    def _dim(self, on: bool) -> None:
        """Darken every widget's colours (a dimmed backdrop), or restore them."""
        if not on:
            for widget, colours in self.dimmed:
                widget.configure(**colours)
            self.dimmed = []
            self.root.configure(background=self.BACKGROUND)
            return
        self.root.configure(background=_darker(self.BACKGROUND))
        for widget in self.root.winfo_children():
            colours = {}
            for option in ("background", "foreground", "readonlybackground", "highlightbackground"):
                try:
                    colours[option] = str(widget.cget(option))
                except self.tk.TclError:
                    continue
            self.dimmed.append((widget, colours))
            widget.configure(**{k: _darker(v, widget) for k, v in colours.items()})

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
        self.buttons[widget.name] = button

    def _soon(self, *_: Any) -> None:
        self.root.after(10, self.publish)

    def _answer(self) -> None:
        """Answer a request of :class:`TkFormApp` (checked every 20 ms): handle every event
        the X server has sent, and (``settled``) wait until no delayed input is left, then
        publish the state with the request's token."""
        try:
            request = json.loads(_request_path(self.state_path).read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            request = None
        if request is not None and request["token"] != self.answered:
            self.root.update()
            if request["mode"] == "current" or not self.pending:
                self.answered = request["token"]
                self.publish()
        self.root.after(20, self._answer)

    def save(self) -> None:
        self.saved.append({key: entry.get() for key, entry in self.entries.items()})
        self.status.set(f"Saved {self.entries['name'].get() or '(empty)'}")
        self._soon()

    def clear(self) -> None:
        for entry in self.entries.values():
            entry.delete(0, "end")
        self.status.set("Cleared")
        self._soon()

    def _faults(self) -> list[str]:
        """The faults on screen now."""
        faults = [] if self.plan.layout == self.initial_layout else ["changed"]
        faults += sorted(self.modal)
        return faults + (["frozen"] if self.frozen else [])

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
            "inputs": self.inputs,
            "ignored": self.ignored,
            "faults": self._faults(),
            "pending": self.pending,
            "answer": self.answered,
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


def _request_path(state_path: Path) -> Path:
    """Where :class:`TkFormApp` writes a request for the form's state."""
    return state_path.with_suffix(".ask")


def _kind(event: Any) -> str:
    """The event's type by name (``ButtonRelease``, ``KeyPress``)."""
    return str(getattr(event.type, "name", event.type))


def _darker(colour: str, widget: Any = None) -> str:
    """``colour`` at 45 % brightness, as ``#rrggbb``."""
    if widget is not None:
        red, green, blue = (v // 257 for v in widget.winfo_rgb(colour))
    else:
        red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return "#{:02x}{:02x}{:02x}".format(*(round(v * 0.45) for v in (red, green, blue)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m askcache.testing.tk_form")
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
    variants.add_argument(
        "--theme", choices=["light", "dark"], default="light", help="dark: light text on dark"
    )
    variants.add_argument(
        "--font-scale", type=float, default=1.0, help="draw the text this much larger"
    )
    faults = parser.add_argument_group("faults, for the fault-injection tests (module docstring)")
    faults.add_argument("--position", type=int, nargs=2, default=(0, 0), metavar=("X", "Y"))
    faults.add_argument("--prefill", default="", help="text already in the Name field")
    faults.add_argument("--change-after", type=int, default=None, metavar="N")
    faults.add_argument("--change-to", default="banner", choices=["banner", "swapped"])
    faults.add_argument("--dialog-after", type=int, default=None, metavar="N")
    faults.add_argument("--backdrop-after", type=int, default=None, metavar="N")
    faults.add_argument("--slow", type=float, default=0.0, metavar="SECONDS")
    faults.add_argument("--freeze-after", type=int, default=None, metavar="N")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run the form (the body of the child process)."""
    args = _parser().parse_args(argv)
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

    def start(self, timeout: float = 180.0) -> None:
        """Launch the application and wait until it has published its first state (its
        window is drawn then). ``timeout`` only guards against a form that hangs."""
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

    def stop(self) -> None:
        """Close the application."""
        stop_process(self._process)
        self._process = None

    def current(self, timeout: float = 180.0) -> dict[str, Any]:
        """The state once the form has handled every input the X server has delivered to it
        so far (an action that returned has been delivered) and drawn the result; a slow
        form's delayed inputs may still be due. ``timeout`` only guards against a hang."""
        return self._ask("current", timeout)

    def settled(self, timeout: float = 180.0) -> dict[str, Any]:
        """As :meth:`current`, once a slow form has also applied every delayed input."""
        return self._ask("settled", timeout)

    def _ask(self, mode: str, timeout: float) -> dict[str, Any]:
        token = uuid.uuid4().hex
        request, tmp = _request_path(self.state_file), self.state_file.with_suffix(".ask.tmp")
        tmp.write_text(json.dumps({"token": token, "mode": mode}))
        os.replace(tmp, request)
        deadline = time.monotonic() + timeout
        while True:
            state = self.state()
            if state.get("answer") == token:
                return state
            if self._process is None or self._process.poll() is not None:
                raise AskCacheError("the Tk form is not running")
            if time.monotonic() > deadline:
                raise AskCacheError(f"the Tk form did not answer within {timeout} s")
            time.sleep(0.02)

    def state(self) -> dict[str, Any]:
        """The latest published state (it follows each change by a moment: to read it at a
        known moment, use :meth:`current` or :meth:`settled`)."""
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
