"""Start-up configuration: the daemon's own settings (data directory, address, API key), the
arguments over them, the remembered local-network switch, and how the daemon is bound. The
window itself opening and starting a daemon is in ``test_gui_e2e_daemon``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from localllm.app.gui.main import (
    PORT_KEY,
    lan_memory,
    parse_args,
    port_memory,
    remembered_lan,
    remembered_port,
    run_app,
    with_remembered_port,
)
from localllm.app.gui.state.daemon_control import DaemonControl
from localllm.app.gui.system_libraries import SystemLibrary, missing_libraries, qt_platform_problem
from localllm.daemon.client.launcher import DaemonStartError
from localllm.daemon.security.keys import ApiKeyStore
from localllm.daemon.settings import Settings


def test_arguments_go_over_the_daemons_own_settings():
    env = {"LOCALLLM_DATA": "/srv/llm", "LOCALLLM_HOST": "127.0.0.1:7000"}
    argv = ["--host", "127.0.0.1:9999", "--data-dir", "/tmp/x", "--no-start", "--theme", "dark"]
    config = parse_args([*argv, "-style", "fusion"], env)  # Qt's own options pass through
    assert config.base_url == "http://127.0.0.1:9999"
    assert config.data_dir == Path("/tmp/x") and not config.autostart and config.theme == "dark"
    default = parse_args([], env)
    assert default.base_url == "http://127.0.0.1:7000" and default.theme is None
    assert default.data_dir == Path("/srv/llm")  # where the daemon keeps its data too
    assert parse_args([], {}).data_dir == Settings.from_env({}).data_dir
    assert parse_args(["--host", "http://127.0.0.1:11435"], {}).base_url.endswith(":11435")


def test_a_bad_setting_is_one_line_not_a_traceback(monkeypatch, capsys):
    monkeypatch.setenv("LOCALLLM_HOST", "127.0.0.1:port")
    assert run_app([]) == 2
    assert capsys.readouterr().err.startswith("localllm app: invalid port")


def test_the_local_network_switch_is_remembered(tmp_path):
    prefs = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    assert not remembered_lan(prefs)
    lan_memory(prefs)(True)
    prefs.sync()
    assert remembered_lan(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))


def test_where_the_daemon_is_bound(tmp_path):
    keys = ApiKeyStore(tmp_path, use_keyring=False)
    local = Settings(host="127.0.0.1", port=7000, config_dir=tmp_path)
    assert DaemonControl(local, keys=keys).bind_settings().host == "127.0.0.1"
    lan = DaemonControl(local, lan=True, keys=keys)
    assert lan.bind_settings().host == "0.0.0.0" and lan.url == "http://127.0.0.1:7000"
    wildcard = DaemonControl(Settings(host="0.0.0.0", port=7000), keys=keys)
    assert wildcard.lan and wildcard.url == "http://127.0.0.1:7000"  # LOCALLLM_HOST=0.0.0.0
    wildcard.lan = False  # the switch turned off
    assert wildcard.bind_settings().host == "127.0.0.1"
    remote = DaemonControl(Settings(host="192.0.2.10", port=7000), lan=True, keys=keys)
    assert remote.remote and not remote.lan and remote.url == "http://192.0.2.10:7000"
    assert remote.bind_settings().host == "192.0.2.10"  # never started here: ensure_daemon
    with pytest.raises(DaemonStartError, match="another computer"):  # refuses, and so do we
        remote.switch(False, stop=lambda: pytest.fail("a remote daemon is not stopped"))


def test_the_api_key_is_made_once_and_only_when_asked(tmp_path):
    keys = ApiKeyStore(tmp_path, use_keyring=False)
    control = DaemonControl(Settings(config_dir=tmp_path), keys=keys)
    assert control.stored_key() is None  # nothing is created behind the user's back
    key = control.api_key()
    assert key and control.api_key() == key == control.stored_key() == keys.load()
    configured = DaemonControl(Settings(api_key="from-env", config_dir=tmp_path), keys=keys)
    assert configured.api_key() == configured.stored_key() == "from-env"


def test_missing_x11_libraries_are_named_with_the_line_that_installs_them():
    present = SystemLibrary("libc.so.6", "libc6")
    missing = SystemLibrary("libxcb-localllm-nowhere.so.9", "libxcb-localllm-nowhere9")
    also = SystemLibrary("libxkbcommon-localllm-nowhere.so.7", "libxkbcommon-localllm-nowhere7")
    assert missing_libraries([present, missing, also]) == [missing, also]  # the real loader
    xcb = {"QT_QPA_PLATFORM": "xcb"}
    problem = qt_platform_problem(xcb, platform="linux", libraries=[present, missing, also])
    assert "libxcb-localllm-nowhere.so.9" in problem and "libc.so.6" not in problem
    [command] = [line.strip() for line in problem.splitlines() if "apt-get" in line]
    assert command == (
        "sudo apt-get install libxcb-localllm-nowhere9 libxkbcommon-localllm-nowhere7"
    )
    assert qt_platform_problem(xcb, platform="linux", libraries=[present]) is None
    # only where Qt would use X11: not another platform, not macOS, not a Wayland session
    offscreen = {"QT_QPA_PLATFORM": "offscreen"}
    assert qt_platform_problem(offscreen, platform="linux", libraries=[missing]) is None
    assert qt_platform_problem({}, platform="darwin", libraries=[missing]) is None
    wayland = {"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0"}
    assert qt_platform_problem(wayland, platform="linux", libraries=[missing]) is None
    assert qt_platform_problem({}, platform="linux", libraries=[missing]) is not None


def test_the_port_chosen_in_the_app_is_used_unless_the_address_was_given(tmp_path):
    prefs = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    assert remembered_port(prefs) is None
    port_memory(prefs)(7777)
    prefs.sync()
    again = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    assert remembered_port(again) == 7777
    assert with_remembered_port(parse_args([], {}), again).base_url == "http://127.0.0.1:7777"
    given = parse_args([], {"LOCALLLM_HOST": "127.0.0.1:7000"})  # the environment wins
    assert given.port_fixed and with_remembered_port(given, again).base_url.endswith(":7000")
    argued = parse_args(["--host", "127.0.0.1:9000"], {})  # and so does --host
    assert with_remembered_port(argued, again).base_url.endswith(":9000")
    again.setValue(PORT_KEY, "not a port")
    assert remembered_port(again) is None
