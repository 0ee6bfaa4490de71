"""What a user's type checker sees of the public API (mypy run on a user-style file)."""

import subprocess
import sys
from pathlib import Path

CHECKED = Path(__file__).parent / "typing_checks" / "parsed_types.py"


def test_a_verbs_format_types_its_parsed_value() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--strict",
            "--follow-imports=silent",
            str(CHECKED),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
