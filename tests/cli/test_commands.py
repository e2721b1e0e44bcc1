"""Every command against a stand-in client: what it prints, what it asks the daemon, and its
exit status. (The same flows against the real daemon are in ``test_e2e_*.py``.)"""

from __future__ import annotations

import json
import sys
import types

import pytest

from localllm.daemon.api import ProgressResponse, VerifyProblem, VerifyResponse
from localllm.daemon.client import DaemonUnavailable, ServerBusy
from tests.support.cli import (
    MODEL,
    PS_HEADER,
    SHOW,
    answer_chunks,
    running_model,
    thinking_chunks,
)

DIGEST = "sha256:" + "8eeb52dfb3bb" + "0" * 52


def test_list_table_json_and_filter(run_cli, fake):
    fake.models = [MODEL, MODEL.model_copy(update={"name": "qwen2.5:0.5b", "size": 397_000_000})]
    status, out, _ = run_cli("list")
    lines = out.splitlines()
    assert status == 0
    assert lines[0].split() == ["NAME", "ID", "SIZE", "MODIFIED"]
    assert lines[1].startswith("tiny:latest ") and "abababababab" in lines[1]
    assert "4.7 GB" in lines[1] and "years ago" in lines[1]
    assert "397 MB" in lines[2]
    _, out, _ = run_cli("ls", "QWEN")
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "qwen2.5:0.5b"]
    _, out, _ = run_cli("list", "--json")
    assert [m["name"] for m in json.loads(out)] == ["tiny:latest", "qwen2.5:0.5b"]


def test_ps_table(run_cli, fake):
    fake.loaded = [
        running_model(
            "tiny:latest",
            digest="sha256:" + "cd" * 32,
            size=5_500_000_000,
            size_vram=0,
            processor="100% CPU",
            context_length=4096,
            num_parallel=16,
            expires_at="2999-01-01T00:00:00Z",
        ),
        running_model("gpu:latest", size=1000, size_vram=500, expires_at=""),
    ]
    status, out, _ = run_cli("ps")
    header, first, second = out.splitlines()
    assert status == 0
    assert header.split() == PS_HEADER
    assert "cdcdcdcdcdcd" in first and "5.5 GB" in first and "100% CPU" in first
    assert first.split()[6:8] == ["4096", "16"] and first.endswith("Forever")  # ctx, slots

    assert "f16, flash auto" in first  # the KV cache type and flash attention it runs with
    assert "50%/50% CPU/GPU" in second
    assert json.loads(run_cli("ps", "--json")[1])[0]["context_length"] == 4096


def test_ps_says_when_the_daemon_sized_a_context_to_what_fits(run_cli, fake):
    sized = "the largest context that fits: 12,288 tokens (4 slots, 9.8 GiB free)"
    fake.loaded = [
        running_model("fitted:latest", context_length=12288, context_reason=sized),
        running_model("asked:latest", context_length=4096, context_reason="num_ctx"),
    ]
    _, out, _ = run_cli("ps")
    assert out.splitlines()[3:] == [f"fitted:latest: {sized}"]


def test_show_summary(run_cli):
    status, out, _ = run_cli("show", "tiny")
    assert status == 0
    assert "  Model\n    architecture        llama\n    parameters          8.0B\n" in out
    assert "    context length      131072\n" in out
    assert "    embedding length    4096\n    quantization        Q4_K_M\n" in out
    assert "  Capabilities\n    completion\n    tools\n" in out
    assert '    stop                           "<|im_end|>"' in out
    assert "  System\n    You are tiny.\n" in out
    assert "  License\n    MIT License\n    Copyright\n    ...\n" in out


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("--modelfile", "FROM tiny\nPARAMETER temperature 0.7\n"),
        ("--template", "{{ .Prompt }}\n"),
        ("--system", "You are tiny.\n"),
        ("--license", "MIT License\nCopyright\nline three\n"),
        ("--parameters", SHOW.parameters + "\n"),
    ],
)
def test_show_one_part(run_cli, flag, expected):
    assert run_cli("show", "tiny", flag)[1] == expected


def test_show_json_and_exclusive_flags(run_cli, capsys):
    shown = json.loads(run_cli("show", "tiny", "--json")[1])
    assert shown["capabilities"] == ["completion", "tools"]
    with pytest.raises(SystemExit) as caught:
        run_cli("show", "tiny", "--system", "--license")
    assert caught.value.code == 2


def test_cp_and_rm(run_cli, fake):
    assert run_cli("cp", "tiny", "mine") == (0, "copied 'tiny' to 'mine'\n", "")
    fake.missing = {"gone"}
    status, out, err = run_cli("rm", "gone", "mine")
    assert status == 1
    assert out == "deleted 'mine'\n"
    assert err == "Error: model 'gone' not found\n"
    assert ("delete", "mine") in fake.calls


def pull_events():
    yield ProgressResponse(status="pulling manifest")
    for done in (0, 500, 1000):
        yield pulling(done)
    yield ProgressResponse(status="verifying sha256 digest")
    yield ProgressResponse(status="writing manifest")
    yield ProgressResponse(status="success")


def pulling(done: int) -> ProgressResponse:
    return ProgressResponse(
        status="pulling 8eeb52dfb3bb", digest=DIGEST, total=1000, completed=done
    )


def test_pull_shows_progress_on_stderr(run_cli, fake):
    fake.pull_events = list(pull_events())
    status, out, err = run_cli("pull", "tiny")
    assert status == 0 and out == ""
    lines = err.splitlines()
    assert lines[0] == "pulling manifest"
    assert lines[1].startswith("pulling 8eeb52dfb3bb...  100% ▕")
    assert lines[-1] == "success"


def test_pull_json_prints_each_event(run_cli, fake):
    fake.pull_events = list(pull_events())
    _, out, _ = run_cli("pull", "tiny", "--json")
    events = [json.loads(line) for line in out.splitlines()]
    assert events == [event.model_dump(exclude_none=True) for event in fake.pull_events]


def test_ctrl_c_pauses_the_pull(run_cli, fake):
    def interrupted(name):
        yield pulling(10)
        raise KeyboardInterrupt

    fake.pull = interrupted
    status, _, err = run_cli("pull", "big")
    assert status == 130
    assert ("pause_pull", "big") in fake.calls
    assert err.rstrip().endswith("paused; run the same command again to resume")


def test_a_cancelled_pull_is_an_error(run_cli, fake):
    fake.pull_events = [ProgressResponse(status=s) for s in ("pulling manifest", "cancelled")]
    status, _, err = run_cli("pull", "big")
    assert status == 1 and err.endswith("Error: the pull of 'big' was cancelled\n")


def test_pull_cancel_and_pulls(run_cli, fake):
    status, _, err = run_cli("pull", "big", "--cancel")
    assert status == 0 and ("cancel_pull", "big") in fake.calls and "cancelled" in err
    _, out, _ = run_cli("pulls")
    assert out.splitlines()[1].split() == ["big:latest", "paused", "25%", "(50", "B/200", "B)"]
    assert json.loads(run_cli("pulls", "--json")[1])[0]["status"] == "paused"


def test_run_one_prompt(run_cli, fake):
    fake.chat_chunks = answer_chunks("Hello", " there")
    status, out, err = run_cli(
        "run", "tiny", "Say", "hi", "-o", "temperature", "0", "--keepalive", "1m", stdin=""
    )
    assert (status, out, err) == (0, "Hello there\n", "")
    _, model, messages, kwargs = next(call for call in fake.calls if call[0] == "chat")
    assert model == "tiny" and messages == [{"role": "user", "content": "Say hi"}]
    assert kwargs == {"options": {"temperature": 0.0}, "keep_alive": "1m", "format": None}


def test_run_load_anyway_reaches_the_daemon_as_an_option(run_cli, fake):
    """``--load-anyway``: the option that loads a model whose memory plan does not fit."""
    fake.chat_chunks = answer_chunks("ok")
    argv = ("run", "tiny", "--load-anyway", "-o", "temperature", "0", "hi")
    assert run_cli(*argv, stdin="") == (0, "ok\n", "")
    sent = next(call for call in fake.calls if call[0] == "chat")[3]
    assert sent["options"] == {"temperature": 0.0, "load_anyway": True}
    fake.calls.clear()
    assert run_cli("run", "tiny", "hi", stdin="")[0] == 0
    assert next(call for call in fake.calls if call[0] == "chat")[3]["options"] is None


def test_run_reads_piped_stdin_before_the_prompt(run_cli, fake):
    fake.chat_chunks = answer_chunks("ok")
    run_cli("run", "tiny", "Summarize", "--system", "Be brief", stdin="line one\nline two\n")
    messages = next(call for call in fake.calls if call[0] == "chat")[2]
    assert messages == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "line one\nline two\n\nSummarize"},
    ]


def test_run_verbose_prints_timings_to_stderr(run_cli, fake):
    fake.chat_chunks = answer_chunks("ok")
    _, out, err = run_cli("run", "tiny", "hi", "--verbose", "--format", "json", stdin="")
    assert out == "ok\n"
    assert err.splitlines() == [
        "total duration:       1.5s",
        "load duration:        20ms",
        "prompt eval count:    10 token(s)",
        "prompt eval duration: 100ms",
        "prompt eval rate:     100.00 tokens/s",
        "eval count:           50 token(s)",
        "eval duration:        1s",
        "eval rate:            50.00 tokens/s",
    ]
    assert next(call for call in fake.calls if call[0] == "chat")[3]["format"] == "json"


def test_run_pulls_a_missing_model_first(run_cli, fake):
    fake.missing = {"new"}
    fake.pull_events = list(pull_events())
    fake.chat_chunks = answer_chunks("hi")
    status, out, err = run_cli("run", "new", "hello", stdin="")
    assert status == 0 and out == "hi\n" and "success" in err
    # shown again after the pull: its capabilities say whether image paths are attached
    assert [c[0] for c in fake.calls] == ["show", "pull", "show", "chat"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "tiny"], "Error: the prompt is empty"),
        (["run", "tiny", "hi", "-o", "warmth", "1"], "Error: unknown parameter 'warmth'"),
        (["run", "tiny", "hi", "--format", "yaml"], 'Error: --format takes "json" or a'),
    ],
)
def test_run_usage_errors(run_cli, argv, message):
    status, _, err = run_cli(*argv, stdin="")
    assert status == 2 and err.startswith(message) and err.count("\n") == 1


def test_create_uploads_files_then_creates(run_cli, fake, tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"GGUF weights")
    modelfile = tmp_path / "Modelfile"
    modelfile.write_text("FROM ./m.gguf\nSYSTEM hi\n")
    status, _, err = run_cli("create", "mine", "-f", str(modelfile), "-q", "Q4_K_M")
    assert status == 0 and err.rstrip().endswith("success")
    call = next(call for call in fake.calls if call[0] == "create")
    digest = next(call for call in fake.calls if call[0] == "upload_blob")[2]
    assert call == ("create", "mine", "FROM ./m.gguf\nSYSTEM hi\n", {"./m.gguf": digest}, "q4_K_M")


def test_create_errors(run_cli, tmp_path):
    status, _, err = run_cli("create", "mine", "-f", str(tmp_path / "nope"))
    assert status == 1 and err.startswith("Error: no Modelfile at ")
    with pytest.raises(SystemExit):
        run_cli("create", "mine", "-q", "q9_X")


def test_stop(run_cli, fake):
    status, _, err = run_cli("stop", "tiny")
    assert status == 1 and err == "Error: model 'tiny' is not running (see `localllm ps`)\n"
    fake.loaded = [running_model("tiny:latest")]
    assert run_cli("stop", "tiny")[0] == 0
    assert ("unload", "tiny:latest") in fake.calls


def test_prune_and_verify(run_cli, fake):
    assert run_cli("prune")[1] == "removed 3 unused files, freed 1.5 MB\n"
    assert run_cli("verify") == (0, "verified 4 blobs: no problems\n", "")
    bad = "sha256:" + "ee" * 32
    corrupt = [VerifyProblem(digest=bad, models=["tiny:latest"])]
    fake.verify = lambda: VerifyResponse(
        ok=False, checked=4, corrupt=corrupt, missing=[], unreadable_manifests=[]
    )
    status, out, err = run_cli("verify")
    assert status == 1
    assert out.splitlines()[1].split() == ["eeeeeeeeeeee", "corrupt", "tiny:latest"]
    assert "broken models: tiny:latest" in err


def test_login_logout_and_key_use_the_config_dir(run_cli, tmp_path):
    assert run_cli("login", stdin="hf_abc\n")[1] == (
        "Saved your Hugging Face token in a file only you can read "
        "(no system keyring is available).\n"
    )
    token_file = tmp_path / "config" / "hf_token"
    assert token_file.read_text().strip() == "hf_abc" and token_file.stat().st_mode & 0o077 == 0
    assert run_cli("logout")[1] == "Removed the stored Hugging Face token.\n"
    assert run_cli("login", "--token", "   ")[0] == 1
    status, out, _ = run_cli("key")
    key = (tmp_path / "config" / "api_key").read_text().strip()
    assert status == 0 and f"API key: {key}" in out and f"Authorization: Bearer {key}" in out
    assert run_cli("key", "--quiet")[1] == key + "\n"  # the same key, not a new one


def test_client_errors_are_one_line(run_cli, fake):
    def busy():
        raise ServerBusy("server busy: 512 requests are waiting", 503)

    fake.list_models = busy
    assert run_cli("list") == (1, "", "Error: server busy: 512 requests are waiting\n")
    fake.list_models = lambda: (_ for _ in ()).throw(DaemonUnavailable("cannot reach\n the daemon"))
    assert run_cli("list")[2] == "Error: cannot reach the daemon\n"


def test_ctrl_c_exits_130(run_cli, fake):
    def interrupt():
        raise KeyboardInterrupt

    fake.list_models = interrupt
    assert run_cli("list")[0] == 130


def test_serve_execs_the_daemon(run_cli, monkeypatch):
    calls = []
    monkeypatch.setattr("os.execv", lambda path, argv: calls.append(argv))
    run_cli("serve", "--host", "127.0.0.1:9999")
    assert calls == [[sys.executable, "-m", "localllm.daemon", "serve", "--host", "127.0.0.1:9999"]]


def test_app_passes_its_options_through(run_cli, monkeypatch):
    seen = []
    fake_gui = types.ModuleType("localllm.app.gui.main")
    fake_gui.run_app = lambda argv: seen.append(argv) or 0
    monkeypatch.setitem(sys.modules, "localllm.app.gui.main", fake_gui)
    assert run_cli("app", "--theme", "dark")[0] == 0
    assert run_cli("app", "--host", "127.0.0.1:1", "--no-start")[0] == 0
    assert seen == [  # the app reads LOCALLLM_* (and the port chosen in it) by itself
        ["--theme", "dark"],
        ["--host", "127.0.0.1:1", "--no-start"],
    ]


def test_bad_settings_are_a_usage_error(fake, capsys):
    from localllm.app.cli.main import main

    status = main(["list"], {"LOCALLLM_HOST": "127.0.0.1:notaport"}, client_factory=lambda s: fake)
    assert status == 2
    assert capsys.readouterr().err == "Error: invalid port in LOCALLLM_HOST='127.0.0.1:notaport'\n"


def test_a_bug_is_one_line_unless_debugging(run_cli, fake, cli_env):
    def broken():
        raise TypeError("NoneType is not iterable")

    fake.list_models = broken
    status, _, err = run_cli("list")
    assert status == 1
    assert err == (
        "Error: unexpected TypeError: NoneType is not iterable (LOCALLLM_DEBUG=1 shows where)\n"
    )
    cli_env["LOCALLLM_DEBUG"] = "1"
    with pytest.raises(TypeError):
        run_cli("list")


def test_run_think_flags_reach_the_daemon(run_cli, fake):
    fake.chat_chunks = answer_chunks("ok")
    cases = {
        (): None,
        ("--think",): True,
        ("--think=true",): True,
        ("--think=low",): "low",
        ("--think=high",): "high",
        ("--think=false",): False,
        ("--nothink",): False,
        ("--hidethinking",): None,
    }
    for flags, think in cases.items():
        fake.calls.clear()
        # flags after the model, then the prompt: the words after them are still the prompt
        status, out, _ = run_cli("run", "tiny", *flags, "Is", "1009", "prime?", stdin="")
        assert (status, out) == (0, "ok\n"), flags
        _, _, messages, sent = next(call for call in fake.calls if call[0] == "chat")
        assert sent.get("think") == think, flags
        assert messages == [{"role": "user", "content": "Is 1009 prime?"}]


def test_run_words_after_options_are_the_prompt(run_cli, fake):
    fake.chat_chunks = answer_chunks("[1]")
    argv = ["run", "tiny", "--format", "json", "Three", "--verbose", "colors"]
    status, out, _ = run_cli(*argv, stdin="")
    assert (status, out) == (0, "[1]\n")
    messages, sent = next(call for call in fake.calls if call[0] == "chat")[2:]
    assert messages == [{"role": "user", "content": "Three colors"}] and sent["format"] == "json"


def test_run_shows_thinking_apart_from_the_answer(run_cli, fake):
    """stdout is not a terminal here: it holds the answer alone; the thinking is on stderr."""
    fake.chat_chunks = thinking_chunks(["Let me ", "see."], '{"ok": ', "true}")
    status, out, err = run_cli("run", "tiny", "--think", "--format", "json", "Ok?", stdin="")
    assert status == 0 and json.loads(out) == {"ok": True}
    assert err == "Thinking...\nLet me see.\n...done thinking.\n\n"
    status, out, err = run_cli("run", "tiny", "--hidethinking", "--verbose", "Ok?", stdin="")
    assert status == 0 and out == '{"ok": true}\n'
    assert "Thinking" not in err and "Let me" not in err
    assert err.splitlines()[0] == "total duration:       1.5s"  # --verbose is as before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--think=max"], "argument --think: ignored explicit argument 'max'"),
        (["--think", "--nothink"], "argument --nothink: not allowed with argument --think"),
    ],
)
def test_run_think_usage_errors(run_cli, capsys, argv, message):
    with pytest.raises(SystemExit) as exit:
        run_cli("run", "tiny", *argv, "hi", stdin="")
    assert exit.value.code == 2 and capsys.readouterr().err.endswith(f"error: {message}\n")


def test_run_think_budget_is_an_option(run_cli, fake):
    fake.chat_chunks = answer_chunks("ok")
    assert run_cli("run", "tiny", "-o", "think_budget", "64", "hi", stdin="")[0] == 0
    assert next(call for call in fake.calls if call[0] == "chat")[3]["options"] == {
        "think_budget": 64
    }
    status, _, err = run_cli("run", "tiny", "-o", "think_budget", "lots", "hi", stdin="")
    assert status == 2 and "think_budget needs an integer" in err
