"""What users of `llm` type works, or says how: a bare prompt, `-T NAME`, a typo in
`--functions`, and `parlay models` read on an 80-column terminal (a session tried each)."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_parlay import run

from parlay.cli.models_cmd import model_forms


def test_a_bare_prompt_runs_as_prompt_does(tmp_path: Path) -> None:
    done = run(["Say hi"], tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["user", "Say hi"]]


def test_a_bare_prompt_after_prompt_options(tmp_path: Path) -> None:
    done = run(["-s", "be brief", "Say hi", "--no-stream"], tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["system", "be brief"], ["user", "Say hi"]]


def test_commands_and_help_still_work_beside_the_bare_prompt(tmp_path: Path) -> None:
    log = tmp_path / "log.db"
    helped = run(["--help"], log)
    assert helped.returncode == 0 and "prompt" in helped.stdout and "logs" in helped.stdout
    assert run(["logs", "--json"], log).returncode == 0
    assert run(["--version"], log).stdout.startswith("parlay ")
    # A near miss of a command is a typo, not a prompt sent to the model.
    typo = run(["promt", "hi"], log)
    assert typo.returncode == 2 and "Did you mean 'prompt'" in typo.stderr


def test_t_with_a_tool_name_says_it_takes_a_file_and_how_to_write_a_function(
    tmp_path: Path, tools_file: Path
) -> None:
    done = run(["prompt", "hi", "-T", "add"], tmp_path / "log.db")
    assert done.returncode == 2
    assert "-T add: there is no file 'add'" in done.stderr
    assert "-T takes a Python file" in done.stderr and "--functions 'def add(" in done.stderr
    # With a file that defines it, the message says the tool is already there.
    both = run(["prompt", "hi", "-T", "add", "-T", str(tools_file)], tmp_path / "log.db")
    assert "The tools given are add, shout" in both.stderr


def test_a_syntax_error_in_functions_shows_the_line_and_where(tmp_path: Path) -> None:
    code = "def multiply(a: int, b: int) -> int ..."
    done = run(["prompt", "7*6?", "--functions", code], tmp_path / "log.db")
    assert done.returncode == 2
    assert "--functions code does not run (line 1): SyntaxError: expected ':'" in done.stderr
    assert f"\n    {code}\n" in done.stderr
    assert "^" in done.stderr and "fix the file" not in done.stderr


def test_an_error_running_functions_shows_its_line(tmp_path: Path) -> None:
    code = 'def f(a: int) -> int:\n    """Same."""\n    return a\nlimit = 1 / 0\n'
    done = run(["prompt", "x", "--functions", code], tmp_path / "log.db")
    assert done.returncode == 2
    assert "(line 4): ZeroDivisionError: division by zero\n    limit = 1 / 0" in done.stderr


def test_parlay_models_shows_every_example_whole_on_80_columns(tmp_path: Path) -> None:
    done = run(["models"], tmp_path / "log.db")  # not a terminal: rich lays out 80 columns
    assert done.returncode == 0
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    for form in model_forms():
        assert form.example in done.stdout, form.example


def test_o_key_value_sets_a_generation_option_as_llms_does(tmp_path: Path) -> None:
    args = ["-m", "options", "-o", "temperature", "0.2", "-o", "stop", "END", "-o", "seed=7", "hi"]
    done = run(args, tmp_path / "log.db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"temperature": 0.2, "stop": ["END"], "seed": 7}


def test_o_with_an_unknown_key_or_a_value_out_of_range_is_refused_saying_what_is_wanted(
    tmp_path: Path,
) -> None:
    for args, says in (
        (["-o", "temp", "1"], "-o temp: no such option; the options are temperature, top_p"),
        (["-o", "top_p", "2"], "top_p '2': must be a number from 0 to 1"),
        (["-o", "max_tokens", "-5"], "max_tokens '-5': must be a whole number of 1 or more"),
        (["--temperature", "nan"], "temperature 'nan': must be a number from 0 to 2"),
        (["-o", "temperature", "1", "--temperature", "1"], "temperature is given twice"),
    ):
        done = run(["-m", "options", *args, "hi"], tmp_path / "log.db")
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)


def test_o_pairs_are_read_up_to_a_double_dash_only() -> None:
    from parlay.cli.default_command import joined_pairs

    assert joined_pairs(["-o", "seed", "3", "hi"]) == ["-o", "seed=3", "hi"]
    assert joined_pairs(["-o", "seed=3", "hi"]) == ["-o", "seed=3", "hi"]
    assert joined_pairs(["--", "-o", "a", "b"]) == ["--", "-o", "a", "b"]
