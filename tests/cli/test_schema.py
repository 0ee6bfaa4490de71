"""`--schema` as llm takes it: a JSON schema inline or in a file, or a pydantic model as
module:Class; the answer is asked for as JSON matching it and printed once checked
(real subprocesses; the scripted `json` script answers only when a response format is sent)."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_parlay import run

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def test_inline_json_schema_prints_matching_json(tmp_path: Path) -> None:
    done = run(["prompt", "who?", "-m", "json", "--schema", json.dumps(PERSON)], tmp_path / "l.db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_schema_file(tmp_path: Path) -> None:
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON))
    done = run(["prompt", "who?", "-m", "json", "--schema", str(schema)], tmp_path / "l.db")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_pydantic_model_path(tmp_path: Path) -> None:
    (tmp_path / "people.py").write_text(
        "from pydantic import BaseModel\n\nclass Person(BaseModel):\n    name: str\n    age: int\n"
    )
    done = run(
        ["prompt", "who?", "-m", "json", "--schema", "people:Person"],
        tmp_path / "l.db",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_an_answer_not_matching_the_schema_is_an_error(tmp_path: Path) -> None:
    wants_email = {**PERSON, "required": ["name", "email"]}
    done = run(
        ["prompt", "who?", "-m", "json", "--schema", json.dumps(wants_email)], tmp_path / "l.db"
    )
    assert done.returncode == 1
    assert "does not match --schema" in done.stderr
    assert "email" in done.stderr
    assert done.stdout == ""


def test_a_schema_that_is_neither_json_nor_a_model_says_what_it_takes(tmp_path: Path) -> None:
    done = run(["prompt", "who?", "--schema", "nonsense"], tmp_path / "l.db")
    assert done.returncode != 0
    assert "module:Class" in done.stderr
