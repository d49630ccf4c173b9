"""The README's example and its two commands stay true."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.usefixtures("few_auto_runs")  # the code runs: two runs of n_init="auto" show it
def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_ci_runs_exactly_the_readme_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, flags=re.S)
    test_cmd = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd.strip() in ci.splitlines()
    main_job = next(c for c in commands if c.startswith("pip install") and "hmrf " in c)
    assert "hmrf compare" in main_job
