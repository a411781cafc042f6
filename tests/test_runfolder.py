"""gotk.runfolder: the one rule of a resumable run's output folder (encode, export and self-play use it) and its
done-records, on real folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gotk.runfolder import RunFolderError, prepare_run_folder, read_done_record, without_defaults, write_done_record

RECORD = {"options": {"seed": 1, "split": "train=1"}, "sources": [{"path": "a.sgf", "sha256": "00"}]}
KW = {"run_file": ".work/run.json", "finished_file": "done.json", "finished_keys": ("options", "sources")}


def test_a_new_folder_is_created_and_records_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    found = prepare_run_folder(out, RECORD, resume=False, **KW)
    assert not found.finished and found.damaged == []
    assert json.loads((out / ".work" / "run.json").read_text()) == RECORD


def test_a_folder_with_anything_in_it_needs_resume_and_the_same_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stray.txt").write_text("x")
    with pytest.raises(RunFolderError) as e:
        prepare_run_folder(out, RECORD, resume=False, **KW)
    assert e.value.reason == "out_not_empty"
    with pytest.raises(RunFolderError) as e:
        prepare_run_folder(out, RECORD, resume=True, **KW)
    assert e.value.reason == "out_not_resumable"
    (out / "stray.txt").unlink()

    prepare_run_folder(out, RECORD, resume=False, **KW)
    (out / "part.tmp").write_text("half")  # a killed run's temp file
    other = {**RECORD, "options": {"seed": 2, "split": "train=1"}}
    with pytest.raises(RunFolderError) as e:
        prepare_run_folder(out, other, resume=True, **KW)
    assert e.value.reason == "resume_mismatch"
    assert e.value.differences == ["options.seed is 1 in the run, 2 now"]
    assert (out / "part.tmp").exists()  # nothing is touched before the records agree
    assert not prepare_run_folder(out, RECORD, resume=True, **KW).finished
    assert not (out / "part.tmp").exists()


def test_a_finished_run_is_verified_and_redone_when_damaged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "done.json").write_text(json.dumps({**RECORD, "rows": 5}))
    found = prepare_run_folder(out, RECORD, resume=True, verify=lambda marker: [], **KW)
    assert found.finished and not (out / ".work").exists()

    problem = {"file": "part-0.parquet", "problem": "sha256 differs"}
    found = prepare_run_folder(out, RECORD, resume=True, verify=lambda marker: [problem], **KW)
    assert not found.finished and found.damaged == [problem]
    assert not (out / "done.json").exists() and (out / ".work" / "run.json").is_file()


def test_ignored_names_and_a_comparable_view(tmp_path: Path) -> None:
    """Self-play's use: the record at the top, a starting agent beside it, more games asked on a rerun."""
    out = tmp_path / "sp"
    out.mkdir()
    (out / "init.gotk").write_text("agent")
    kw = {"run_file": "selfplay.json", "ignore": ("init.gotk",),
          "comparable": lambda r: {k: v for k, v in r.items() if k != "games"}}
    prepare_run_folder(out, {"seed": 1, "games": 4}, resume=False, **kw)
    prepare_run_folder(out, {"seed": 1, "games": 8}, resume=True, **kw)
    assert json.loads((out / "selfplay.json").read_text()) == {"seed": 1, "games": 8}
    with pytest.raises(RunFolderError) as e:
        prepare_run_folder(out, {"seed": 2, "games": 8}, resume=True, **kw)
    assert e.value.differences == ["seed is 1 in the run, 2 now"]


def test_a_run_recorded_before_an_option_existed_resumes_at_its_default(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prepare_run_folder(out, RECORD, resume=False, **KW)  # recorded without "metadata"
    kw = {**KW, "comparable": without_defaults({"metadata": False})}
    at_default = {**RECORD, "options": {**RECORD["options"], "metadata": False}}
    assert not prepare_run_folder(out, at_default, resume=True, **kw).finished
    (out / ".work" / "run.json").write_text(json.dumps(RECORD))
    with pytest.raises(RunFolderError) as e:  # the option set otherwise is another run
        prepare_run_folder(out, {**RECORD, "options": {**RECORD["options"], "metadata": True}}, resume=True, **kw)
    assert e.value.differences == ["options.metadata is True now, not set in the run"]
    with pytest.raises(RunFolderError):  # without the comparable, the new key differs
        prepare_run_folder(out, at_default, resume=True, **KW)


def test_done_records(tmp_path: Path) -> None:
    path = tmp_path / "work" / "shard-train-00000.json"
    assert read_done_record(path) is None
    write_done_record(path, {"digest": "abc", "rows": 3})
    assert read_done_record(path) == {"digest": "abc", "rows": 3}
    assert read_done_record(path, digest="abc") == {"digest": "abc", "rows": 3}
    assert read_done_record(path, digest="other") is None  # written for another plan
    path.write_text("{trunc")
    assert read_done_record(path) is None
