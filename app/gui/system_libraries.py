"""Before Qt opens a window on Linux: are the system libraries of its X11 platform there?

PySide6's wheel carries Qt itself but not the X11 libraries its ``xcb`` platform loads. On a
fresh Debian or Ubuntu machine some are missing (``libxcb-cursor0``, ``libxcb-icccm4``...) and
Qt aborts with "could not load the Qt platform plugin" and a list of plugins, which tells a new
user nothing. So the app loads each library by its exact name first (the dynamic loader, as Qt
would) and, if any is missing, says which and gives the one ``apt-get`` line that installs
them. Qt-free: it runs before PySide6 is imported.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["XCB_LIBRARIES", "SystemLibrary", "main", "missing_libraries", "qt_platform_problem"]


@dataclass(frozen=True, slots=True)
class SystemLibrary:
    soname: str  # what the dynamic loader looks for
    package: str  # the Debian/Ubuntu package that installs it


# What Qt's GUI module and its xcb platform plugin link against, beyond glibc and what every
# desktop has (from ``ldd`` of libQt6Gui, libQt6XcbQpa and libqxcb).
XCB_LIBRARIES: tuple[SystemLibrary, ...] = tuple(
    SystemLibrary(soname, package)
    for soname, package in (
        ("libGL.so.1", "libgl1"),
        ("libEGL.so.1", "libegl1"),
        ("libfontconfig.so.1", "libfontconfig1"),
        ("libdbus-1.so.3", "libdbus-1-3"),
        ("libX11-xcb.so.1", "libx11-xcb1"),
        ("libxcb.so.1", "libxcb1"),
        ("libxcb-cursor.so.0", "libxcb-cursor0"),
        ("libxcb-icccm.so.4", "libxcb-icccm4"),
        ("libxcb-image.so.0", "libxcb-image0"),
        ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
        ("libxcb-randr.so.0", "libxcb-randr0"),
        ("libxcb-render.so.0", "libxcb-render0"),
        ("libxcb-render-util.so.0", "libxcb-render-util0"),
        ("libxcb-shape.so.0", "libxcb-shape0"),
        ("libxcb-shm.so.0", "libxcb-shm0"),
        ("libxcb-sync.so.1", "libxcb-sync1"),
        ("libxcb-util.so.1", "libxcb-util1"),
        ("libxcb-xfixes.so.0", "libxcb-xfixes0"),
        ("libxcb-xkb.so.1", "libxcb-xkb1"),
        ("libxkbcommon.so.0", "libxkbcommon0"),
        ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    )
)


def missing_libraries(libraries: Iterable[SystemLibrary]) -> list[SystemLibrary]:
    """Those of ``libraries`` the dynamic loader cannot load."""
    missing = []
    for library in libraries:
        try:
            ctypes.CDLL(library.soname)
        except OSError:
            missing.append(library)
    return missing


def _uses_xcb(env: Mapping[str, str], platform: str) -> bool:
    """Whether Qt would open its windows through X11 here."""
    if not platform.startswith("linux"):
        return False
    chosen = [p.split(":")[0] for p in env.get("QT_QPA_PLATFORM", "").split(";") if p]
    if chosen:
        return chosen[0] == "xcb"
    wayland = env.get("XDG_SESSION_TYPE") == "wayland" and bool(env.get("WAYLAND_DISPLAY"))
    return not wayland  # Qt prefers its Wayland platform in a Wayland session


def qt_platform_problem(
    env: Mapping[str, str],
    *,
    platform: str = sys.platform,
    libraries: Iterable[SystemLibrary] = XCB_LIBRARIES,
) -> str | None:
    """What to install before the window can open, or None when nothing is missing."""
    if getattr(sys, "frozen", False) or not _uses_xcb(env, platform):
        return None  # the installers carry their own copies
    missing = missing_libraries(libraries)
    if not missing:
        return None
    names = ", ".join(library.soname for library in missing)
    packages = " ".join(dict.fromkeys(library.package for library in missing))
    return (
        f"the desktop app needs system libraries for Qt's X11 windows that are missing here "
        f"({names}). On Debian or Ubuntu, install them with:\n"
        f"    sudo apt-get install {packages}"
    )


def main() -> int:
    """``python -m app.gui.system_libraries``: ``./dev app`` asks before its long install."""
    problem = qt_platform_problem(os.environ)
    if problem is not None:
        print(f"localllm app: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
