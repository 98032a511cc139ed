"""The ``hypermem`` command line (typer's CliRunner, in process), on embedded stores in tmp dirs.

``query`` and ``ingest locomo`` run against the shared session store on each engine (on FalkorDB
the CLI joins the embedded server the session fixture started), where the test conversation is memory
``testconv``; ``demo`` runs on a fresh store, as on a fresh clone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engines import engine_env
from typer.testing import CliRunner

from hypermem.cli import app
from hypermem.config import Settings


@pytest.fixture
def cli_env(monkeypatch):
    """Environment for a CLI run: no LLM, a wide terminal; ``use(target)`` points HYPERMEM_STORE at an
    embedded store directory, or at the store of ``Settings`` (the session store on either engine)."""
    monkeypatch.setenv("HYPERMEM_LLM_BASE_URL", "")
    monkeypatch.setenv("COLUMNS", "220")

    def use(target: Path | Settings) -> None:
        env = engine_env(target) if isinstance(target, Settings) else {"HYPERMEM_STORE": f"falkordb://{target}"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)

    return use


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def test_demo_ingests_the_bundled_sample_and_shows_the_evidence(cli_env, tmp_path):
    cli_env(tmp_path / "fresh")
    result = run("demo")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "sample-1" in out  # the counts table
    assert "When did Tomas start volunteering at the community garden?" in out
    evidence = out.split("evidence turns", 1)[1]
    assert "D1:2" in evidence and "community garden" in evidence
    assert "context" in out and "tokens" in out


def test_query_json_has_the_output_contract(cli_env, hm_settings, hm_ingested):
    cli_env(hm_settings)
    result = run("query", "--memory", hm_ingested.memory_id, "--json", "When did Nadia run the half marathon?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"turns", "facts", "episodes", "stop", "context", "context_tokens"} <= set(data)
    assert set(data["stop"]) >= {"query_type", "rule", "cut_at"}
    assert "D1:1" in [t["dia_id"] for t in data["turns"]]
    assert all({"dia_id", "text", "score", "path"} <= set(t) for t in data["turns"])
    assert data["memory_id"] == "testconv" and data["context_tokens"] > 0


def test_query_unknown_memory_names_the_option(cli_env, hm_settings, hm_ingested):
    cli_env(hm_settings)
    result = run("query", "--memory", "nobody-here", "Where?")
    assert result.exit_code == 2
    assert "--memory: no memory 'nobody-here'; see `hypermem memories`" in result.output
    long = run("query", "--memory", "x" * 5000, "Where?")
    assert long.exit_code == 2 and "(5000 characters)" in long.output and len(long.output) < 300


def test_query_bad_turn_budget_is_refused(cli_env, hm_settings, hm_ingested):
    cli_env(hm_settings)
    result = run("query", "--memory", "testconv", "--turn-budget", "0", "Where?")
    assert result.exit_code == 2 and "--turn-budget" in result.output
    bogus = run("query", "--memory", "testconv", "--stopping", "bogus", "Where?")
    assert bogus.exit_code == 2 and "error: --stopping: must be 'adaptive' or 'fixed'" in bogus.output


def test_ingest_locomo_prints_counts_and_skips_what_is_stored(cli_env, hm_settings, hm_ingested, hm_testconv_file):
    cli_env(hm_settings)
    result = run("ingest", "locomo", str(hm_testconv_file), "--no-llm")
    assert result.exit_code == 0, result.output
    row = next(
        line for line in result.stdout.splitlines() if line.startswith("testconv\t")
    )  # plain table off a terminal
    cells = row.split("\t")
    report = hm_ingested.report
    expected = [report.turns, report.episodes, report.topics, report.facts, report.persons, report.times,
                report.locations, report.hyperedges]  # fmt: skip
    assert cells[0] == "testconv" and cells[1:9] == [str(v) for v in expected]
    assert cells[9] == "0/3"  # sessions new/skipped: already ingested in this store
    assert "LLM: off (no-LLM path)" in result.stdout


def test_ingest_locomo_unknown_conversation_names_the_option(cli_env, tmp_path, hm_testconv_file):
    cli_env(tmp_path / "db")
    result = run("ingest", "locomo", str(hm_testconv_file), "--conversation", "conv-404")
    assert result.exit_code != 0
    assert "--conversation: unknown sample_id ['conv-404']" in result.output
    assert "testconv" in result.output  # it says what the file has


def test_ingest_locomo_missing_file_is_a_clear_error(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    result = run("ingest", "locomo", str(tmp_path / "nope.json"))
    assert result.exit_code != 0
    assert "error:" in result.output and "nope.json" in result.output
    assert "Traceback" not in result.output


def test_ingest_locomo_non_utf8_file_is_a_clear_error(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"sample_id": "x", "conversation": {"session_1": [{"text": "caf\xe9"}]}}]')
    result = run("ingest", "locomo", str(path))
    assert result.exit_code == 2
    assert "error:" in result.output and "latin1.json" in result.output and "Traceback" not in result.output


def test_ingest_locomo_with_one_bad_conversation_stores_none(cli_env, tmp_path, hm_testconv_file):
    """Every conversation of the file is checked before any is stored: the good one first does not slip in."""
    cli_env(tmp_path / "db")
    good = json.loads(hm_testconv_file.read_text())[0]
    bad = json.loads(json.dumps(good))
    bad["sample_id"] = "badone"
    first = next(key for key in bad["conversation"] if key.startswith("session_") and not key.endswith("date_time"))
    bad["conversation"][first][0]["text"] = "a NUL \x00 here"
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([good, bad]))
    result = run("ingest", "locomo", str(path))
    assert result.exit_code != 0  # the installed command prints the error as one line and exits 2 (_run_app)
    assert str(result.exception) == "badone.session_1[0].text: contains a NUL character"  # LoCoMo's names
    listed = run("memories")
    assert listed.exit_code == 0 and good["sample_id"] not in listed.stdout  # nothing stored


def test_llm_flag_without_an_llm_exits_2(cli_env, tmp_path, hm_testconv_file):
    cli_env(tmp_path / "db")
    result = run("ingest", "locomo", str(hm_testconv_file), "--llm")
    assert result.exit_code == 2 and "HYPERMEM_LLM_BASE_URL" in result.output


def test_output_off_a_terminal_is_a_plain_table_and_agrees_with_the_json(cli_env, tmp_path):
    """Issue 9 §7: piped output keeps whole headers; the stop line matches the JSON of the same query."""
    import re

    cli_env(tmp_path / "plain")
    result = run("demo")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[lines.index("# ingested") + 1].split("\t")
    assert header == ["conversation", "turns", "episodes", "topics", "facts", "persons", "times", "locations",
                      "hyperedges", "sessions new/skipped", "seconds"]  # fmt: skip
    assert "…" not in result.stdout
    kept, considered = map(int, re.search(r"kept (\d+) of (\d+) candidate turns", result.stdout).groups())
    as_json = run(
        "query", "--memory", "sample-1", "--json", "When did Tomas start volunteering at the community garden?"
    )
    stop = json.loads(as_json.stdout)["stop"]
    assert (kept, considered) == (stop["cut_at"], stop["considered"])
    context = result.stdout.split("context (", 1)[1].splitlines()[2:]
    assert context and all(
        re.fullmatch(r"\[[^\]]+\] \S.* said on \d{1,2} [A-Z][a-z]+ \d{4}: .+", line) for line in context
    ), context


def test_ingest_json_prints_the_reports_only(cli_env, tmp_path, hm_testconv_file):
    cli_env(tmp_path / "ingest-json")
    result = run("ingest", "locomo", str(hm_testconv_file), "--json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["memory_id"] == "testconv" and report["turns"] == 22 and report["sessions_ingested"] == 3


ANSI = "\x1b[31m red \x1b]0;pwned\x07"


def test_control_characters_in_text_are_stored_but_printed_escaped(cli_env, tmp_path):
    """A turn with ANSI/terminal-title escapes: stored exactly (the JSON has them), printed as \\xNN."""
    from conftest import TESTCONV_SESSIONS, make_testconv_record

    original = TESTCONV_SESSIONS[0][1][0]["text"]
    path = tmp_path / "ansi.json"
    path.write_text(json.dumps([make_testconv_record(edits={"D1:1": f"{original} {ANSI}"})]), encoding="utf-8")
    cli_env(tmp_path / "ansi")
    ingested = run("ingest", "locomo", str(path))
    assert ingested.exit_code == 0, ingested.output
    question = "When did Nadia run the half marathon? \x1b[2J"
    shown = run("query", "--memory", "testconv", question)
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "\\x1b[31m red \\x1b]0;pwned\\x07" in shown.stdout  # the turn, in the table and the context
    assert "half marathon? \\x1b[2J" in shown.stdout  # the query line
    as_json = json.loads(run("query", "--memory", "testconv", "--json", question).stdout)
    assert as_json["query"] == question
    assert f"{original} {ANSI}" in [t["text"] for t in as_json["turns"]]


def test_control_characters_in_an_error_are_escaped(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    result = run("ingest", "locomo", str(tmp_path / "no\x1b]0;pwned\x07.json"))
    assert result.exit_code == 2
    assert "\x1b" not in result.output and "no\\x1b]0;pwned\\x07.json" in result.output


@pytest.mark.parametrize(
    ("field", "value", "named", "problem"),
    [
        ("speaker", "Nadia\x1b[31m", "speaker", "must not contain control characters (tabs and line breaks included)"),
        # "D1:1 " would be another turn than "D1:1"
        ("dia_id", "D1:1 ", "dia_id", "must not start or end with whitespace (or a braille blank)"),
        ("blip_caption", "a cat\x00", "blip_caption", "contains a NUL character"),
        ("speaker", " Nadia", "speaker", "must not start or end with whitespace (or a braille blank)"),
    ],
)
def test_a_bad_speaker_or_dia_id_is_refused_naming_the_field(
    cli_env, tmp_path, monkeypatch, capsys, field, value, named, problem
):
    """Through the console entry point ``run`` (one line naming the field, exit 2)."""
    from conftest import make_testconv_record

    from hypermem.cli import run as entry_point

    record = make_testconv_record()
    record["conversation"]["session_1"][0][field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    cli_env(tmp_path / "db")
    monkeypatch.setattr("sys.argv", ["hypermem", "ingest", "locomo", str(path)])
    with pytest.raises(SystemExit) as exited:
        entry_point()
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"error: testconv.session_1[0].{named}: {problem}\n"  # as the file names it


def test_a_duplicate_sample_id_or_a_conversation_without_sessions_is_refused_before_writing(cli_env, tmp_path):
    from conftest import make_testconv_record

    cli_env(tmp_path / "db")
    first, second = make_testconv_record(), make_testconv_record()
    second["conversation"]["session_1"][0]["text"] = "another text under the same sample_id"
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps([first, second]), encoding="utf-8")
    result = run("ingest", "locomo", str(twice))
    assert result.exit_code == 2
    assert "sample_id 'testconv' appears more than once" in result.output

    empty = make_testconv_record()
    empty["sample_id"] = "no-talk"
    empty["conversation"] = {k: v for k, v in empty["conversation"].items() if not k.startswith("session_")}
    sessionless = tmp_path / "sessionless.json"
    sessionless.write_text(json.dumps([empty]), encoding="utf-8")
    result = run("ingest", "locomo", str(sessionless))
    assert result.exit_code == 2
    assert "no-talk.conversation: no sessions" in result.output


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_a_server_on_a_busy_port_or_a_bad_host_prints_no_banner_and_names_the_option(cli_env, tmp_path, command):
    import socket

    cli_env(tmp_path / "db")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run(*command, "--port", str(port))
    assert result.exit_code == 2
    assert f"cannot start: --port {port}: Address already in use" in result.output
    assert "hypermem API on" not in result.output
    result = run(*command, "--host", "no-such-host.invalid")
    assert result.exit_code == 2
    assert "--host 'no-such-host.invalid'" in result.output
    assert "hypermem API on" not in result.output


def test_a_newline_in_an_error_is_escaped_so_the_error_stays_one_line(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    path = tmp_path / "newline.json"
    path.write_text(json.dumps([{"sample_id": "m-ctrl\n\x00", "conversation": None}]), encoding="utf-8")
    result = run("ingest", "locomo", str(path))
    assert result.exit_code == 2
    assert result.output == "error: m-ctrl\\x0a\\x00.conversation: missing or not an object\n"


def test_version_and_the_stopping_choices_are_shown():
    from importlib.metadata import version

    assert run("--version").output == f"hypermem {version('hypermem')}\n"
    shown = run("query", "--help").output
    assert "[adaptive|fixed]" in shown


def test_demo_given_the_bundled_sample_by_another_path_needs_no_question(cli_env, tmp_path):
    from hypermem.cli import _sample_path

    cli_env(tmp_path / "db")
    link = tmp_path / "sample.json"
    link.symlink_to(_sample_path())
    result = run("demo", str(link))
    assert result.exit_code == 0, result.output
    assert "When did Tomas start volunteering at the community garden?" in result.stdout


@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
def test_a_closed_stdout_ends_quietly_with_0(unbuffered):
    """stdout's reader already gone: buffered, the exit flush meets it; unbuffered, click's write does."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered, "COLUMNS": "80"}
    try:
        done = subprocess.run([sys.executable, "-m", "hypermem.cli", "--help"], stdout=write_end,
                              stderr=subprocess.PIPE, env=env, timeout=120)  # fmt: skip
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")


def test_output_piped_into_head_ends_with_0():
    import subprocess
    import sys

    command = f'{sys.executable} -m hypermem.cli --help | head -2; echo "status ${{PIPESTATUS[0]}}" >&2'
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.stderr == "status 0\n" and "Usage:" in done.stdout


def test_memories_lists_and_delete_removes_one_memory_only(cli_env, tmp_path, hm_testconv_file):
    cli_env(tmp_path / "db")
    assert run("demo").exit_code == 0
    assert run("ingest", "locomo", str(hm_testconv_file)).exit_code == 0
    listed = run("memories")
    assert listed.exit_code == 0, listed.output
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in listed.stdout.splitlines()[2:]}
    assert set(rows) == {"sample-1", "testconv"} and rows["sample-1"][0] == "24"  # the sample's 24 turns
    assert int(rows["sample-1"][3]) > 0  # its vocabulary words
    as_json = {m["memory_id"]: m for m in json.loads(run("memories", "--json").stdout)}
    assert list(as_json["sample-1"]) == ["memory_id", "turns", "episodes", "facts", "words"]
    assert [str(v) for v in list(as_json["sample-1"].values())[1:]] == rows["sample-1"]  # the table's numbers
    unknown = run("delete", "nope", "--yes")
    assert unknown.exit_code == 2 and "MEMORY: no memory 'nope'" in unknown.output
    kept = run("delete", "sample-1", input="n\n")  # asked, and answered no
    assert kept.exit_code == 1 and "sample-1" in run("memories").stdout and "--yes deletes" in kept.output
    unanswered = run("delete", "sample-1", input="")  # no answer at all (< /dev/null)
    assert unanswered.exit_code == 1 and "not deleted" in unanswered.output and "sample-1" in run("memories").stdout
    deleted = run("delete", "sample-1", "--yes")
    assert deleted.exit_code == 0 and "deleted memory 'sample-1'" in deleted.stdout, deleted.output
    after = run("memories").stdout
    assert "sample-1" not in after and "testconv" in after


def test_demo_names_a_missing_file_before_anything_else(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    result = run("demo", str(tmp_path / "absent.json"))  # no --question either: the file is named first
    assert result.exit_code == 2  # the one line `hypermem ingest locomo` prints for a missing file
    assert result.stderr == f"error: PATH {str(tmp_path / 'absent.json')!r}: no such file\n"


@pytest.mark.parametrize("out", ["/dev/null/x", "A_FILE", "/proc/hypermem-x"])
def test_eval_locomo_checks_out_before_any_work(cli_env, tmp_path, hm_testconv_file, out):
    cli_env(tmp_path / "db")
    if out == "A_FILE":
        out = str(tmp_path / "a-file")
        (tmp_path / "a-file").write_text("x")
    result = run("eval", "locomo", str(hm_testconv_file), "--out", out)
    assert result.exit_code == 2 and "--out" in result.output
    assert ("cannot be made" if out.startswith("/proc") else "must be a directory") in result.output
    assert not (tmp_path / "db").exists()  # refused before the store was even opened


def test_a_usage_error_off_a_terminal_is_plain_lines_not_a_panel():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "hypermem.cli", "query"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "Error: Missing argument 'QUESTION'."
    assert "╭" not in done.stderr and "│" not in done.stderr


@pytest.mark.parametrize(("question", "message"), [("\u200b\u200d", "must be a non-empty string"),
                                                   ("x" * 2001, "2001 characters; the limit is 2000"),
                                                   ("\U0001f9e0", "holds no word to search for")])  # fmt: skip
def test_demo_says_why_a_question_is_refused_before_it_ingests(cli_env, tmp_path, question, message):
    cli_env(tmp_path / "db")
    result = run("demo", "-q", question)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --question: {message}") and result.stdout == ""
    assert not (tmp_path / "db").exists()  # nothing ingested: the store was never opened


def test_eval_locomo_names_an_unknown_qa_system_with_or_without_qa(cli_env, tmp_path, hm_testconv_file):
    cli_env(tmp_path / "db")
    result = run("eval", "locomo", str(hm_testconv_file), "--out", str(tmp_path / "ev"), "--qa-system", "nope")
    assert result.exit_code == 2 and result.stderr.startswith("error: --qa-system: unknown system ['nope']")
    assert not (tmp_path / "ev").exists() and not (tmp_path / "db").exists()


def test_eval_on_a_bad_file_fails_before_any_output_or_directory(cli_env, tmp_path):
    cli_env(tmp_path / "db")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "", "conversation": {}}]', encoding="utf-8")
    for command in ("locomo", "cv"):
        result = run("eval", command, str(bad), "--out", str(tmp_path / command))
        assert (
            str(result.exception) == f"{bad}[0].sample_id: empty" and result.output == ""
        )  # run() prints it, one line
        assert not (tmp_path / command).exists()


def test_a_memory_the_api_lists_before_its_first_job_ran_is_listed_and_deleted_by_the_cli(cli_env, hm_settings,
                                                                                         hm_service):  # fmt: skip
    """The API lists a memory from its first accepted batch (an owner and a queued job, no turn yet): so do
    ``hypermem memories`` and ``hypermem delete``."""
    from hypermem.api import create_app

    settings = hm_settings.model_copy(update={"admin_key": "cli-admin", "llm_base_url": None})
    api = create_app(settings, hm_service, sync_batch_limit=1)
    client = api.test_client()
    key = client.post("/v1/tenants/cli/keys", headers={"Authorization": "Bearer cli-admin"}).get_json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    batch = [{"message_id": f"q{i}", "speaker": "Ana", "text": f"Ana went hiking, day {i}.",
              "timestamp": f"2024-05-0{i}T10:00:00", "session_id": "s1"} for i in (1, 2)]  # fmt: skip
    with hm_service.lock("cli-queued", "ingest"):  # another writer holds the memory: the job stays queued
        accepted = client.post("/v1/memories/cli-queued/messages", headers=headers, json={"messages": batch})
        assert accepted.status_code == 202, accepted.get_json()
        api.extensions["hypermem"].close()  # shut down before the job could start: it stays queued
    listed = client.get("/v1/memories", headers=headers).get_json()["memories"]
    assert [m["memory_id"] for m in listed] == ["cli-queued"]
    cli_env(hm_settings)
    shown = run("memories", "--json")
    assert shown.exit_code == 0, shown.output
    memory = next(m for m in json.loads(shown.stdout) if m["memory_id"] == "cli-queued")
    assert memory["turns"] == 0
    asked = run("query", "--memory", "cli-queued", "hiking?")
    assert asked.exit_code == 2 and "holds no dialogue yet" in asked.stderr, asked.output
    deleted = run("delete", "cli-queued", "--yes")
    assert deleted.exit_code == 0 and "deleted memory 'cli-queued'" in deleted.stdout, deleted.output
    assert client.get("/v1/memories", headers=headers).get_json()["memories"] == []
    assert "cli-queued" not in run("memories", "--json").stdout


@pytest.mark.parametrize("how", ["raise KeyboardInterrupt()", "raise SystemExit(130)"], ids=["raised", "typer-exit"])
def test_ctrl_c_says_interrupted_on_one_line_and_exits_130(how):
    """typer turns Ctrl-C inside a command into a silent exit 130; outside one it is a KeyboardInterrupt."""
    import subprocess
    import sys

    code = f"import hypermem.cli as c\ndef boom():\n    {how}\nc._run_app = boom\nc.run()\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


@pytest.mark.parametrize(
    "command", [["memories"], ["query", "--memory", "m", "what?"], ["delete", "m", "--yes"], ["reindex"]]
)
def test_a_command_that_only_reads_a_store_creates_none_at_a_mistyped_path(tmp_path, command):
    import os
    import subprocess
    import sys

    missing = tmp_path / "mistyped"
    env = {**os.environ, "HYPERMEM_STORE": f"falkordb://{missing}", "HYPERMEM_LLM_BASE_URL": ""}
    done = subprocess.run([sys.executable, "-m", "hypermem.cli", *command], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    expected = f"error: HYPERMEM_STORE='falkordb://{missing}': no store at '{missing}' (an ingest creates one)\n"
    assert done.stderr == expected
    assert not missing.exists()


def test_query_prints_a_long_turns_matching_passage_not_its_whole_text(cli_env, hm_service):
    """A 40,000-character answer is one evidence row of its matching passage (``snippet``), not 40,000 characters
    from its beginning (the matched end would never show)."""
    from long_messages import coding_chat

    hm_service.ingest_messages("cli-long", coding_chat(40_000))
    cli_env(hm_service.settings)
    try:
        result = run("query", "--memory", "cli-long", "What was the root cause of the flaky staging deploys?")
    finally:
        hm_service.store.delete_memory("cli-long")
    assert result.exit_code == 0, result.output
    evidence = result.stdout.split("evidence turns", 1)[1].split("context (", 1)[0]
    assert "C1:4" in evidence and "expired TLS" in " ".join(evidence.split())
    assert len(evidence) < 12_000, len(evidence)


def test_the_path_column_says_when_an_exact_match_put_a_turn_first():
    from hypermem.cli import _step_text
    from hypermem.retrieve.result import PathStep

    assert _step_text(PathStep("fused", "t", score=0.0903, via="exact_match")) == "fused(0.090, exact match)"
    assert _step_text(PathStep("fused", "t", score=0.1562)) == "fused(0.156)"
    assert _step_text(PathStep("hyperedge", "h", weight=0.812)) == "hyperedge(w=0.81)"
    assert _step_text(PathStep("episode", "e", via="bm25")) == "episode"


def test_the_path_column_says_which_question_a_reply_follows():
    from hypermem.cli import _path_text
    from hypermem.retrieve.result import PathStep

    question = [PathStep("query", "query"), PathStep("fused", "m/turn/D15:25", score=0.0502, via="exact_match")]
    assert _path_text([*question, PathStep("turn", "m/turn/D15:25", dia_id="D15:25")]) == "fused(0.050, exact match)"
    reply = PathStep("turn", "m/turn/D15:26", dia_id="D15:26", reply_to="D15:25")
    assert _path_text([*question, reply]) == "fused(0.050, exact match) -> reply to D15:25"


def test_a_console_that_cannot_encode_the_text_gets_escapes_not_a_traceback(hm_settings, hm_ingested):
    """PYTHONIOENCODING=ascii: the question's ü and 中 are printed as ``\\xfc`` and ``\\u4e2d`` (``run`` sets stdout
    and stderr to backslashreplace), where rich raised UnicodeEncodeError."""
    import os
    import subprocess
    import sys

    env = {**os.environ, **engine_env(hm_settings), "PYTHONIOENCODING": "ascii", "HYPERMEM_LLM_BASE_URL": ""}
    done = subprocess.run([sys.executable, "-m", "hypermem.cli", "query", "-m", "testconv", "Zürich puppy 中?"],
                          capture_output=True, env=env, timeout=300)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b""), done.stderr.decode(errors="replace")
    assert done.stdout.startswith(b"Z\\xfcrich puppy \\u4e2d?  (")
    assert done.stdout.isascii()


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("query", "query [OPTIONS] QUESTION"),
        ("ingest locomo", "ingest locomo [OPTIONS] PATH"),
        ("demo", "demo [OPTIONS] [PATH]"),
        ("delete", "delete [OPTIONS] MEMORY"),
        ("eval locomo", "eval locomo [OPTIONS] PATH"),
        ("eval cv", "eval cv [OPTIONS] PATH"),
        ("eval fit-ranker", "eval fit-ranker [OPTIONS] PATH"),
    ],
)
def test_usage_lines_name_the_arguments_as_usage_lines_do(cli_env, command, usage):
    """``QUESTION``, ``[PATH]``: not typer's ``{QUESTION}`` or a lower-case ``{path}``."""
    shown = run(*command.split(), "--help").output
    assert f"Usage: root {usage}\n" in shown.replace(" \n", "\n").lstrip(), shown
    missing = run(*command.split()) if command != "demo" else None
    if missing is not None:
        assert f"Missing argument '{usage.rsplit(' ', 1)[1]}'" in missing.output


def test_ctrl_c_after_a_finished_ingest_is_reported_exits_0(tmp_path):
    """A Ctrl-C while the CLI stops the embedded FalkorDB after the report (seconds: it flushes its log) does not
    turn the complete ingest into exit 130; the next command finds the memory whole."""
    import os
    import signal
    import subprocess
    import sys

    from hypermem.cli import _sample_path

    env = {**os.environ, "HYPERMEM_STORE": f"falkordb://{tmp_path / 'db'}", "HYPERMEM_LLM_BASE_URL": ""}
    ingest = subprocess.Popen([sys.executable, "-m", "hypermem.cli", "ingest", "locomo", _sample_path()],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert ingest.stdout is not None
    shown = [line for line in ingest.stdout if not line.startswith("LLM:")]  # the report's last line
    ingest.send_signal(signal.SIGINT)
    assert (ingest.wait(timeout=120), ingest.stderr.read()) == (0, "")  # type: ignore[union-attr]
    assert any(line.startswith("sample-1\t24\t") for line in shown), shown
    listed = subprocess.run([sys.executable, "-m", "hypermem.cli", "memories"], capture_output=True, text=True,
                            env=env, timeout=120)  # fmt: skip
    assert "sample-1\t24\t6\t" in listed.stdout, listed.stdout + listed.stderr


def test_a_command_leaves_the_ctrl_c_handler_as_it_found_it(cli_env, tmp_path, hm_testconv_file):
    """The ingest ignores Ctrl-C once its work is done, until its store is closed: not after it returns."""
    import signal

    cli_env(tmp_path / "db")
    before = signal.getsignal(signal.SIGINT)
    assert run("ingest", "locomo", str(hm_testconv_file)).exit_code == 0
    assert signal.getsignal(signal.SIGINT) is before is not signal.SIG_IGN


def _with_bad_turns(tmp_path, record: dict, bad: dict[tuple[int, int], dict]) -> Path:
    """``record`` as a LoCoMo file, with turn ``index`` of ``session_N`` replaced by ``bad[(N, index)]``."""
    for (session, index), turn in bad.items():
        record["conversation"][f"session_{session}"][index] = turn
    path = tmp_path / "bad-turns.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    return path


def test_ingest_names_every_bad_turn_of_the_file(tmp_path):
    """Three turns the ingest refuses (as the HTTP API lists them all): three lines, each naming its LoCoMo field."""
    import os
    import subprocess
    import sys

    from conftest import make_testconv_record

    record = make_testconv_record("three-bad")
    turns = {(n, i): dict(record["conversation"][f"session_{n}"][i]) for n, i in ((1, 1), (2, 0), (3, 4))}
    turns[1, 1]["speaker"] = " "
    turns[2, 0]["text"] = "a NUL \x00 here"
    turns[3, 4]["dia_id"] = "a/b"
    path = _with_bad_turns(tmp_path, record, turns)
    env = {**os.environ, "HYPERMEM_STORE": f"falkordb://{tmp_path / 'db'}", "HYPERMEM_LLM_BASE_URL": ""}
    done = subprocess.run([sys.executable, "-m", "hypermem.cli", "ingest", "locomo", str(path)], capture_output=True,
                          text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: three-bad.session_1[1].speaker: missing or empty",
        "error: three-bad.session_2[0].text: contains a NUL character",
        "error: three-bad.session_3[4].dia_id: must not contain '/'",
    ]


def test_a_file_with_many_bad_turns_names_the_first_20_then_how_many_more(cli_env, tmp_path):
    from conftest import make_testconv_record

    from hypermem.cli import SHOWN_PROBLEMS

    cli_env(tmp_path / "db")
    record = make_testconv_record("many-bad")
    bad = {(2, i): {"dia_id": f"D2:{i + 1}", "speaker": "Omar"} for i in range(12)}  # no text
    bad |= {(n, i): "not a turn" for n in (1, 3) for i in range(5)}
    result = run("ingest", "locomo", str(_with_bad_turns(tmp_path, record, bad)))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == SHOWN_PROBLEMS + 1 == 21
    assert lines[0] == "error: many-bad.session_1[0]: expected an object (a turn), got str"
    assert lines[5] == "error: many-bad.session_2[0].text: missing or not a string"
    assert lines[-1] == "error: and 2 more (22 problems)"


def test_query_warns_of_an_unfinished_memory_before_its_result(cli_env, tmp_path, hm_testconv_file):
    """Turns of sessions no ingest finished (Ctrl-C before the sessions were marked): the warning comes first, so a
    reader that stops early (``| head``) still sees it; doctor names the memory the same way."""
    from hypermem.store import open_store

    cli_env(tmp_path / "db")
    assert run("ingest", "locomo", str(hm_testconv_file)).exit_code == 0
    with open_store(Settings()) as store:
        store.run_cypher("MATCH (s:IngestState {memory_id: 'testconv'}) DELETE s")
        store.run_cypher("MATCH (e:Episode {memory_id: 'testconv'}) DETACH DELETE e")
    asked = run("query", "-m", "testconv", "When did Nadia run the half marathon?")
    assert asked.exit_code == 0, asked.output
    warning = "warning: testconv has 3 of its 3 stored sessions unfinished (an ingest or `hypermem reindex`"
    assert asked.output.startswith(warning), asked.output
    assert "D1:1" in asked.stdout  # and answered
    assert "unfinished memories\ttestconv (3 of its 3 stored sessions unfinished)" in run("doctor").output
